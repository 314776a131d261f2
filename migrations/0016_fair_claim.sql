-- Fair, limited claims (docs/state-machine.md, "The claim's order"): priorities, fair share
-- between requesters (and origin groups), fleet-wide concurrency and start-rate limits per kind,
-- and pausing a kind, all decided by the claim from what PostgreSQL holds.
--
-- job.priority: higher runs first (-10 to 10); 0 for every existing job, the old single line.

ALTER TABLE job ADD COLUMN priority smallint NOT NULL DEFAULT 0;
ALTER TABLE job ADD CONSTRAINT job_priority_range CHECK (priority BETWEEN -10 AND 10);

-- The claim's index. Queued jobs sit in lanes, one per kind, origin group, requester and
-- priority, each in due order: the claim visits each lane with one probe (a loose index scan),
-- takes the first due jobs of each and interleaves them fairly, so a requester's backlog costs
-- a claim one probe, never a scan. It replaces job_claimable (run_at, id), which only the
-- claim and the queue-lag gauge read. coalesce: a job without a group is in the lane ''.
CREATE INDEX job_lane ON job (kind, (coalesce(origin_group, '')), requester, priority, run_at, id)
    WHERE state = 'queued';
DROP INDEX job_claimable;

-- An operator's rules for a kind, over what the kind declares (@kind(concurrency=...)): a
-- fleet-wide cap on its running jobs, a cap on its starts per minute, and a pause. A kind
-- without a row follows its declaration.
CREATE TABLE kind_setting (
    kind              text PRIMARY KEY,
    concurrency       integer CHECK (concurrency >= 0),
    starts_per_minute integer CHECK (starts_per_minute >= 1),
    paused_at         timestamptz,
    paused_by         text,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- The turn of a claim that a limit applies to: such claims lock this one row, so they commit
-- one after another, and each counts the jobs that claims committed after its own snapshot
-- (starts, read as locked minus as seen) against every limit. Counting running jobs from the
-- job table itself means a slot comes back the moment its job leaves the live states, however
-- it left (finished, reaped, cancelled): no counter to drift, nothing to leak.
CREATE TABLE claim_gate (
    id     integer PRIMARY KEY CHECK (id = 1),
    starts bigint NOT NULL DEFAULT 0
);
INSERT INTO claim_gate (id) VALUES (1);

-- When each job of a kind with a start rate started, for the last minute's count; written and
-- pruned by the claim, only for such kinds.
CREATE TABLE kind_start (
    kind text NOT NULL,
    at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX kind_start_recent ON kind_start (kind, at);
