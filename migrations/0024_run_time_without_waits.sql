-- A job's run time (0015's job_run_time) leaves out what its attempts waited in their process
-- for a person (attempt.waited_seconds, 0020), as the job's time bound already does
-- (attempt_seconds_spent): the run time shown is the handler's own, whether it waited in its
-- worker or parked.
CREATE OR REPLACE FUNCTION job_run_time(of_job bigint, current_attempt bigint)
RETURNS TABLE (run_seconds float8, heartbeat_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum(greatest(extract(epoch FROM
               CASE WHEN a.outcome IN ('abandoned', 'lease_lost') THEN a.heartbeat_at
                    ELSE coalesce(a.ended_at, a.heartbeat_at) END - a.started_at)
               - a.waited_seconds, 0)), 0)::float8,
           max(a.heartbeat_at) FILTER (WHERE a.id = current_attempt)
    FROM attempt a
    WHERE a.job_id = of_job
$$;
