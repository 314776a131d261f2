-- Steps: named blocks of a handler with their own budget; every write is fenced by the attempt.

-- name: step_start
-- Open the next step of a job for the attempt holding the lease; no row when it lost the lease.
INSERT INTO step (job_id, attempt_id, number, name)
SELECT j.id, :attempt_id,
       coalesce((SELECT max(number) FROM step WHERE job_id = j.id), 0) + 1, :name
FROM job j
WHERE j.id = :job_id AND j.current_attempt_id = :attempt_id
RETURNING id, number;

-- name: step_end
-- Close a step with its usage and outcome.
UPDATE step SET ended_at = now(), usage = :usage, outcome = :outcome, error = :error
WHERE id = :id AND ended_at IS NULL;

-- name: step_list_by_job
-- A job's steps, oldest first.
SELECT number, name, attempt_id, started_at, ended_at, usage, outcome, error
FROM step WHERE job_id = :job_id ORDER BY number;
