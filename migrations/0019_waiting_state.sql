-- Jobs that talk back (docs/state-machine.md, "Waiting"): a job whose handler waits for an
-- answer, a message or a time longer than a worker keeps it is parked in the new state
-- 'waiting'. Its attempt ends 'parked' (no attempt used up) and it holds no lease, so the
-- constraint job_lease_iff_live (running, cancelling) stays as it is.
--
-- ALTER TYPE ... ADD VALUE commits with this migration's transaction; PostgreSQL refuses to use
-- the new value before that, so what names 'waiting' (the job's wait columns, its indexes) is
-- the next migration.

ALTER TYPE job_state ADD VALUE 'waiting' BEFORE 'unknown';

ALTER TABLE attempt DROP CONSTRAINT attempt_outcome_check;
ALTER TABLE attempt ADD CONSTRAINT attempt_outcome_check CHECK (outcome IN (
    'succeeded', 'failed', 'retry', 'cancelled', 'unknown', 'abandoned', 'released', 'revoked',
    'lease_lost', 'parked'
));
