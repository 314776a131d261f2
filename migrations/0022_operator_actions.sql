-- An operator's window (the dashboard): what operators did, the retry link between jobs, and the
-- fleet's processes with their last heartbeat.

-- The job this one retries: an operator's retry of a failed job makes a new job, a copy of its
-- request, linked here (no foreign key: the old job may be pruned first; see job_retried).
ALTER TABLE job ADD COLUMN retry_of bigint;
-- Almost no job is a retry: the partial index takes no entry for the others (no cost to their
-- writes beyond testing the predicate), and finds a job's retry at once.
CREATE INDEX job_retried ON job (retry_of) WHERE retry_of IS NOT NULL;

-- Every action an operator took through the dashboard or the CLI that is not (only) a job's own
-- event: a kind paused or resumed, a bulk action with its filter and count, and each job-level
-- action too (cancel, force cancel, resolve, retry), whose job event also names the operator.
-- `by` is the person (the dashboard's logged-in user or the proxy's header), never a secret.
CREATE TABLE operator_action (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      timestamptz NOT NULL DEFAULT now(),
    by      text NOT NULL,
    action  text NOT NULL CHECK (action IN ('cancel', 'force_cancel', 'resolve', 'retry',
                                            'pause', 'resume', 'bulk_cancel', 'bulk_retry')),
    kind    text,
    job_id  bigint,
    detail  jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX operator_action_by_job ON operator_action (job_id) WHERE job_id IS NOT NULL;

-- The fleet's long-running processes (errand worker, bot, run, dashboard), each heartbeating its
-- row every few seconds, and deleting it when it stops: what the dashboard's overview shows.
-- `name` is the process's incarnation (host:pid:random; the worker's name on its attempts).
CREATE TABLE errand_process (
    name        text PRIMARY KEY,
    roles       text[] NOT NULL,
    detail      jsonb NOT NULL DEFAULT '{}',
    started_at  timestamptz NOT NULL DEFAULT now(),
    seen_at     timestamptz NOT NULL DEFAULT now()
);
