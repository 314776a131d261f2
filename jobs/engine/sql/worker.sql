-- Workers waiting for work: who a submit wakes (migrations/0012_worker_waiting.sql).
-- Each query starts with "-- name: NAME" and a line or two saying what it does.

-- name: worker_waiting_insert
-- List a worker as waiting, under its LISTEN connection's backend. The exclusive lock waits for
-- every submit that checked for waiting workers without seeing this row to commit, so the claim
-- the worker makes after this statement sees their jobs (docs/state-machine.md, "Waking a
-- worker"). Rows of backends that no longer exist (a worker that died) go too.
WITH gate AS (
    SELECT pg_advisory_xact_lock(hashtextextended('errand:job wake', 0))
), gone AS (
    DELETE FROM worker_waiting w
    WHERE w.pid <> :pid AND NOT EXISTS (SELECT 1 FROM pg_stat_get_activity(w.pid))
)
INSERT INTO worker_waiting (pid, worker)
SELECT :pid, :worker FROM gate
ON CONFLICT (pid) DO UPDATE SET worker = excluded.worker, since = now();

-- name: worker_waiting_delete
-- A worker stops waiting (it stops, or its LISTEN connection was replaced).
DELETE FROM worker_waiting WHERE pid = :pid;
