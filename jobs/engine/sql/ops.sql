-- Operator SQL: scrape-time metrics, the job timeline, the outbox dead letters and pruning
-- (loaded with queries.sql by jobs/engine/queries.py). Nothing here changes a job's state.

-- name: metrics_job_count_by_state_kind
-- Jobs by state and kind, for the errand_jobs gauge.
SELECT state::text AS state, kind, count(*)::bigint AS count FROM job GROUP BY state, kind;

-- name: metrics_queue_lag
-- Seconds the oldest due queued job ($1: queued) has waited (0 when none waits).
SELECT coalesce(extract(epoch FROM now() - min(run_at)), 0)::float8
FROM job WHERE state = $1::job_state AND run_at <= now();

-- name: metrics_outbox
-- Undelivered notices: pending and dead-lettered, and the age of the oldest pending one. Each
-- part reads its own partial index (event_notice_pending, event_notice_dead), not every event.
WITH pending AS (
    SELECT count(*) AS n, min(created_at) AS oldest FROM outbox
    WHERE delivered_at IS NULL AND dead_at IS NULL
)
SELECT p.n AS pending,
       (SELECT count(*) FROM outbox WHERE delivered_at IS NULL AND dead_at IS NOT NULL) AS dead,
       coalesce(extract(epoch FROM now() - p.oldest), 0)::float8 AS oldest_pending_seconds
FROM pending p;

-- name: effect_list_by_job
-- A job's guarded side effects, oldest first (for the timeline).
SELECT id, attempt_id, key, status, has_lookup, outcome, error, created_at, completed_at
FROM effect WHERE job_id = $1 ORDER BY id;

-- name: outbox_list_by_job
-- A job's outbox notices, oldest first (for the timeline).
SELECT id, event_id, topic, payload, created_at, available_at, attempts, delivered_at, dead_at,
       last_error, external_id
FROM outbox WHERE job_id = $1 ORDER BY id;

-- name: outbox_list
-- Notices by status ('dead', 'pending', 'delivered', or NULL for any), newest first.
SELECT o.id, j.public_id, j.kind, o.topic, o.payload, o.created_at, o.available_at, o.attempts,
       o.delivered_at, o.dead_at, o.last_error, o.external_id
FROM outbox o JOIN job j ON j.id = o.job_id
WHERE ($1::text IS NULL
       OR ($1 = 'dead' AND o.dead_at IS NOT NULL AND o.delivered_at IS NULL)
       OR ($1 = 'pending' AND o.dead_at IS NULL AND o.delivered_at IS NULL)
       OR ($1 = 'delivered' AND o.delivered_at IS NOT NULL))
  AND ($2::text IS NULL OR j.public_id = $2)
ORDER BY o.id DESC
LIMIT $3;

-- name: outbox_retry_dead
-- Give dead-lettered notices another delivery: clear dead_at, reset attempts, due now; wakes
-- the delivery loop. $1 NULL means every dead notice. Returns the ids revived.
WITH revived AS (
    UPDATE outbox SET dead_at = NULL, attempts = 0, available_at = now(), last_error = NULL
    WHERE dead_at IS NOT NULL AND delivered_at IS NULL
      AND ($1::bigint[] IS NULL OR id = ANY($1))
    RETURNING id
)
SELECT id, pg_notify('errand_outbox', '')::text AS _notified FROM revived ORDER BY id;

-- name: outbox_get_many
-- Notices by id, with whether each is dead-lettered (to refuse a retry of anything else).
SELECT id, (dead_at IS NOT NULL AND delivered_at IS NULL) AS dead FROM outbox
WHERE id = ANY($1::bigint[]);

-- name: job_prunable
-- Terminal jobs finished more than $1 seconds ago with no pending notice (and, unless $2, no
-- dead-lettered one), oldest first, with their on-disk asset paths (a terminal job never moves).
SELECT j.id, j.public_id,
       coalesce(array_agg(a.path) FILTER (WHERE a.path IS NOT NULL), '{}') AS paths
FROM job j LEFT JOIN asset a ON a.job_id = j.id
WHERE j.state = ANY($3::job_state[])
  AND j.finished_at < now() - make_interval(secs => $1)
  AND NOT EXISTS (
      SELECT 1 FROM outbox o WHERE o.job_id = j.id AND o.delivered_at IS NULL
        AND (o.dead_at IS NULL OR NOT $2::boolean))
GROUP BY j.id
ORDER BY j.id
LIMIT $4;

-- name: job_delete_many
-- Delete jobs by id, with their attempts and events, notices included (which carry no foreign
-- key, see migrations/0008_lean_writes.sql); effects, steps, assets and bindings go by cascade.
WITH gone AS (
    DELETE FROM job WHERE id = ANY($1::bigint[]) AND state = ANY($2::job_state[]) RETURNING id
), attempts AS (
    DELETE FROM attempt WHERE job_id IN (SELECT id FROM gone)
), events AS (
    DELETE FROM event WHERE job_id IN (SELECT id FROM gone)
)
SELECT id FROM gone;
