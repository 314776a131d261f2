-- Runtime SQL of steps, usage, effects and assets (loaded with queries.sql by jobs/engine/queries.py).
-- Every write from a handler is fenced: it only lands while the writer's attempt holds the lease.

-- name: step_start
-- Open the next step of a job for the attempt holding the lease; no row when it lost the lease.
INSERT INTO step (job_id, attempt_id, number, name)
SELECT j.id, $2, coalesce((SELECT max(number) FROM step WHERE job_id = j.id), 0) + 1, $3
FROM job j
WHERE j.id = $1 AND j.current_attempt_id = $2
RETURNING id, number;

-- name: step_end
-- Close a step with its usage and outcome.
UPDATE step SET ended_at = now(), usage = $2, outcome = $3, error = $4
WHERE id = $1 AND ended_at IS NULL;

-- name: step_list_by_job
-- A job's steps, oldest first.
SELECT number, name, attempt_id, started_at, ended_at, usage, outcome, error
FROM step WHERE job_id = $1 ORDER BY number;

-- name: job_usage_get
-- A job's usage so far (all attempts) and its step count, read when an attempt starts metering.
-- An interrupted step (cut short, nothing kept) runs again, so it is not counted.
SELECT j.usage,
       (SELECT count(*) FROM step s
        WHERE s.job_id = j.id AND s.outcome IS DISTINCT FROM 'interrupted') AS steps
FROM job j WHERE j.id = $1;

-- name: job_save_checkpoint
-- Save the handler's state (and the job's usage so far, so the two always agree) from the
-- attempt holding the lease; no row when it lost the lease.
UPDATE job SET checkpoint = $3, checkpoint_attempt_id = $2, checkpoint_at = now(),
               usage = coalesce($4, usage), updated_at = now()
WHERE id = $1 AND current_attempt_id = $2
RETURNING id;

-- name: job_seconds_spent
-- Wall time the job's earlier attempts ran (the per-job time bound covers every attempt).
SELECT coalesce(sum(extract(epoch FROM coalesce(ended_at, now()) - started_at)), 0)::float8
FROM attempt WHERE job_id = $1 AND id <> $2;

-- name: job_set_usage
-- Record a job's usage from the attempt holding the lease.
UPDATE job SET usage = $3, updated_at = now()
WHERE id = $1 AND current_attempt_id = $2
RETURNING id;

-- name: job_lock_for_attempt
-- Lock a job against state changes while the attempt holding its lease writes an effect.
SELECT id FROM job WHERE id = $1 AND current_attempt_id = $2 FOR SHARE;

-- name: effect_get
-- One effect of a job by its stable key.
SELECT * FROM effect WHERE job_id = $1 AND key = $2;

-- name: effect_record_intent
-- Record (or re-arm, after a failure or a reconciled "not done") the intent to do an effect.
INSERT INTO effect (job_id, attempt_id, key, status, has_lookup)
VALUES ($1, $2, $3, 'intent', $4)
ON CONFLICT (job_id, key) DO UPDATE
    SET attempt_id = excluded.attempt_id, status = 'intent', has_lookup = excluded.has_lookup,
        outcome = NULL, error = NULL, completed_at = NULL, created_at = now()
RETURNING id;

-- name: effect_record_outcome
-- Record how an effect ended: done with its outcome, or failed with its error.
UPDATE effect SET status = $3, outcome = $4, error = $5, attempt_id = $6, completed_at = now()
WHERE job_id = $1 AND key = $2
RETURNING id;

-- name: asset_put
-- Store (or replace) an asset from the attempt holding the lease; no row when it lost the lease.
INSERT INTO asset (job_id, attempt_id, name, content_type, size, data, path)
SELECT j.id, $2, $3, $4, $5, $6, $7 FROM job j WHERE j.id = $1 AND j.current_attempt_id = $2
ON CONFLICT (job_id, name) DO UPDATE
    SET attempt_id = excluded.attempt_id, content_type = excluded.content_type,
        size = excluded.size, data = excluded.data, path = excluded.path, created_at = now()
RETURNING id;

-- name: asset_list_by_job
-- A job's assets (without their content), oldest first.
SELECT name, content_type, size, path IS NOT NULL AS in_file, attempt_id, created_at
FROM asset WHERE job_id = $1 ORDER BY id;

-- name: asset_get
-- One asset with its content or file path.
SELECT name, content_type, size, data, path FROM asset WHERE job_id = $1 AND name = $2;

-- name: event_resolved_retry_since
-- Whether a person resolved the job from unknown ($3) to a retry (queued, $4) after a moment (an
-- effect's intent).
SELECT EXISTS (
    SELECT 1 FROM event
    WHERE job_id = $1 AND from_state = $3::job_state AND to_state = $4::job_state AND NOT ignored
      AND at > $2
);
