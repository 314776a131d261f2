-- Operator SQL: scrape-time metrics, the job timeline, the outbox dead letters and pruning
-- (loaded with queries.sql by jobs/queries.py). Nothing here changes a job's state.

-- name: metrics_job_count_by_state_kind
-- Jobs by state and kind, for the errand_jobs gauge.
SELECT state::text AS state, kind, count(*)::bigint AS count FROM job GROUP BY state, kind;

-- name: metrics_queue_lag
-- Seconds the oldest due queued job has waited (0 when none waits).
SELECT coalesce(extract(epoch FROM now() - min(run_at)), 0)::float8
FROM job WHERE state = 'queued' AND run_at <= now();

-- name: metrics_outbox
-- Undelivered notices: pending and dead-lettered, and the age of the oldest pending one.
SELECT count(*) FILTER (WHERE dead_at IS NULL) AS pending,
       count(*) FILTER (WHERE dead_at IS NOT NULL) AS dead,
       coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE dead_at IS NULL)), 0)
           ::float8 AS oldest_pending_seconds
FROM outbox WHERE delivered_at IS NULL;
