-- Attempts: one per claim of a job, holding its lease while it runs.

-- name: attempt_list_by_job
-- A job's attempts, oldest first.
SELECT * FROM attempt WHERE job_id = :job_id ORDER BY number;

-- name: attempt_heartbeat
-- Renew the live leases of one worker in one statement, only those of the attempts it still
-- holds (:attempt_ids: running, or ended with the end not yet written), so an attempt it lost
-- track of expires; report which of them were asked to cancel or are no longer current.
-- It never waits for a row: a finish or the reaper locks jobs, then their attempts, in an order
-- of its own, so a heartbeat that waited for one attempt while holding another could close a
-- cycle (a deadlock). An attempt another statement is writing is skipped, without a verdict;
-- its lease is renewed by the next heartbeat if it is still live, or its end speaks for itself.
-- (NO KEY UPDATE, the UPDATE's own lock: a statement that only references the row is no cause.)
WITH live AS (
    SELECT a.id FROM attempt a
    WHERE a.worker = :worker AND a.ended_at IS NULL AND a.id = ANY(:attempt_ids::bigint[])
), held AS (
    -- ended_at again: a row ended since the statement's snapshot is read anew once locked.
    SELECT a.id FROM attempt a JOIN live l ON l.id = a.id
    WHERE a.ended_at IS NULL
    FOR NO KEY UPDATE OF a SKIP LOCKED
), renewed AS (
    UPDATE attempt a SET heartbeat_at = now(),
                         lease_expires_at = now() + make_interval(secs => :lease_seconds)
    FROM held h, job j
    WHERE a.id = h.id AND j.id = a.job_id AND j.current_attempt_id = a.id
    RETURNING a.id, j.state
)
SELECT x.id AS attempt_id, coalesce(r.state::text, 'lost') AS state
FROM unnest(:attempt_ids::bigint[]) AS x(id) LEFT JOIN renewed r ON r.id = x.id
WHERE r.state = 'cancelling'
   OR (r.id IS NULL
       AND (x.id IN (SELECT id FROM held) OR x.id NOT IN (SELECT id FROM live)));

-- name: attempt_seconds_spent
-- Wall time the job's earlier attempts ran (the per-job time bound covers every attempt), less
-- the time they waited for a person in their process (a parked job runs no attempt at all).
SELECT coalesce(sum(extract(epoch FROM coalesce(ended_at, now()) - started_at)
                    - waited_seconds), 0)::float8
FROM attempt WHERE job_id = :job_id AND id <> :attempt_id;

-- name: attempt_add_waited
-- Add time this attempt waited in its process for an answer or a message (not the handler's own
-- time, see attempt_seconds_spent); fenced by the attempt being its job's current one.
UPDATE attempt a SET waited_seconds = a.waited_seconds + :seconds
FROM job j
WHERE a.id = :attempt_id AND j.id = a.job_id AND j.current_attempt_id = a.id
RETURNING a.id;
