-- How long a job's attempts ran, and when the worker of its current attempt was last heard
-- from: what a transport shows as the job's run time beside its wall time (from submit to end,
-- which counts every wait: in the queue, for a retry, while nothing ran, while it sat unknown),
-- and as "worker not heard from since ..." while a running job's heartbeats stop. One
-- definition, read with the job by job_get and notice_round (jobs/engine/sql).
--
-- An attempt runs from its start to its end; one whose worker was lost (abandoned, or its
-- lease lost to an outage) to its last heartbeat, since nothing ran after it while the lease
-- ran out; one still open, to its last heartbeat, what is known so far (so two reads of the
-- same rows agree, whenever they are made).
CREATE FUNCTION job_run_time(of_job bigint, current_attempt bigint)
RETURNS TABLE (run_seconds float8, heartbeat_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum(extract(epoch FROM
               CASE WHEN a.outcome IN ('abandoned', 'lease_lost') THEN a.heartbeat_at
                    ELSE coalesce(a.ended_at, a.heartbeat_at) END - a.started_at)), 0)::float8,
           max(a.heartbeat_at) FILTER (WHERE a.id = current_attempt)
    FROM attempt a
    WHERE a.job_id = of_job
$$;
