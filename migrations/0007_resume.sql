-- Resume, don't restart: attempts are counted by cause, and a handler's checkpoint survives its
-- attempt (see docs/state-machine.md, "Attempts and failures", and docs/kinds.md, "Resuming").
--
-- job.attempts keeps counting claims (the attempt number); job.failures counts only the attempts
-- that used up one of max_attempts: handler failures, and worker crashes of kinds that say so.
-- A release on shutdown, a lease lost to a database outage and an ordinary crash do not.

ALTER TABLE job
    ADD COLUMN failures integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    -- The handler's own small state (ctx.checkpoint(state)), written only by the attempt holding
    -- the lease; the next attempt receives it as ctx.resume_state.
    ADD COLUMN checkpoint jsonb,
    ADD COLUMN checkpoint_attempt_id bigint,
    ADD COLUMN checkpoint_at timestamptz;

-- 'lease_lost': the lease ran out while the database was unreachable (it restarted after the
-- attempt's last heartbeat); 'abandoned' stays the record of a worker that stopped heartbeating.
ALTER TABLE attempt DROP CONSTRAINT attempt_outcome_check;
ALTER TABLE attempt ADD CONSTRAINT attempt_outcome_check CHECK (outcome IN (
    'succeeded', 'failed', 'retry', 'cancelled', 'unknown', 'abandoned', 'released', 'revoked',
    'lease_lost'
));

-- 'interrupted': the step was cut short by a worker stop, a lost lease or a crash and kept
-- nothing (no checkpoint during it); it runs again and does not count against job_steps.
ALTER TABLE step DROP CONSTRAINT step_outcome_check;
ALTER TABLE step ADD CONSTRAINT step_outcome_check
    CHECK (outcome IN ('ok', 'failed', 'budget_exceeded', 'cancelled', 'interrupted'));
