-- Lean writes on the hot paths (submit, claim, finish; docs/performance.md, docs/state-machine.md
-- "Integrity without foreign keys on the history").
--
-- 1. attempt, event and outbox lose their foreign key to job. A foreign key costs a trigger and
--    a lookup of the job row (FOR KEY SHARE) for every row inserted, and these three tables take
--    three to five rows per job per run: it was a third of a bulk submit's time and a tenth of a
--    claim's. The reference still holds by construction: every statement that writes one of
--    these rows inserts or locks the job row in that same statement (jobs/engine/sql), and the
--    only statement that deletes jobs (job_delete_many, pruning) deletes their attempts, events
--    and outbox rows with them. tests/integration/test_lean_writes.py checks both.
--    The foreign keys of effect, step, asset and discord_binding stay: they are written rarely.
-- 2. attempt keeps the indexes its queries use: its primary key (the heartbeat renews by id, the
--    reaper reaches a job's attempt through job.current_attempt_id), (job_id, number) and the
--    one-live-attempt rule. The two partial indexes by worker and by lease expiry were read by no
--    query; they cost an entry per claim, and the lease one made every heartbeat a non-HOT update.
-- 3. The idempotency key's unique index covers only jobs that have a key: a job without one
--    (most CLI and Python submits) adds no entry to it, on insert or on any of its updates.

ALTER TABLE attempt DROP CONSTRAINT attempt_job_id_fkey;
ALTER TABLE event DROP CONSTRAINT event_job_id_fkey;
ALTER TABLE outbox DROP CONSTRAINT outbox_job_id_fkey;

DROP INDEX attempt_live_by_worker;
DROP INDEX attempt_live_by_lease;

ALTER TABLE job DROP CONSTRAINT job_idempotency_key_key;
CREATE UNIQUE INDEX job_idempotency_key ON job (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
