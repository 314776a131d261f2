-- A submit wakes workers only when one waits for work (docs/performance.md, "Waking a worker";
-- the race and why it cannot strand a job: docs/state-machine.md, "Waking a worker").
--
-- PostgreSQL serialises the commits of transactions that NOTIFY, flush included: one submit's
-- NOTIFY made concurrent submits commit one after another instead of sharing a flush. Now a
-- worker that has free slots and found the queue empty lists itself here, keyed by the backend
-- of its LISTEN connection, and a submit (or a transition back to queued) notifies only when a
-- row exists. A claim after a wake-up takes the worker's row away again, so a burst of submits
-- wakes a worker once, not once per job.
--
-- Unlogged: the rows say who listens now, which a crash ends anyway; their writes cost no WAL.

CREATE UNLOGGED TABLE worker_waiting (
    pid int PRIMARY KEY,  -- pg_backend_pid() of the worker's LISTEN connection
    worker text NOT NULL,
    since timestamptz NOT NULL DEFAULT now()
);

-- Called by every statement that makes a job claimable now. The shared lock, held to the commit,
-- orders this transaction with a worker listing itself (which takes the lock exclusively): the
-- worker's row commits either before the check below (which then sees it: a NOTIFY) or after
-- this transaction has committed (and the claim the worker makes next sees the job). The check
-- runs as its own statement, so it reads a snapshot taken after the lock was granted; a check in
-- the caller's statement would read the snapshot from before it.
CREATE FUNCTION job_wake(kind text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('errand:job wake', 0));
    IF EXISTS (SELECT 1 FROM worker_waiting) THEN
        PERFORM pg_notify('errand_job', kind);
        RETURN true;
    END IF;
    RETURN false;
END
$$;
