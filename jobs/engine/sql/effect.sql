-- Effects: side effects a handler does at most once per job, under a stable key.

-- name: effect_get
-- One effect of a job by its stable key.
SELECT * FROM effect WHERE job_id = :job_id AND key = :key;

-- name: effect_record_intent
-- Record (or re-arm, after a failure or a reconciled "not done") the intent to do an effect.
INSERT INTO effect (job_id, attempt_id, key, status, has_lookup)
VALUES (:job_id, :attempt_id, :key, 'intent', :has_lookup)
ON CONFLICT (job_id, key) DO UPDATE
    SET attempt_id = excluded.attempt_id, status = 'intent', has_lookup = excluded.has_lookup,
        outcome = NULL, error = NULL, completed_at = NULL, created_at = now()
RETURNING id;

-- name: effect_record_outcome
-- Record how an effect ended: done with its outcome, or failed with its error.
UPDATE effect SET status = :status, outcome = :outcome, error = :error,
                  attempt_id = :attempt_id, completed_at = now()
WHERE job_id = :job_id AND key = :key
RETURNING id;

-- name: effect_list_by_job
-- A job's guarded side effects, oldest first (for the timeline).
SELECT id, attempt_id, key, status, has_lookup, outcome, error, created_at, completed_at
FROM effect WHERE job_id = :job_id ORDER BY id;
