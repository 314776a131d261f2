-- The operator's job list (the dashboard, issue "An operator's window") reads a page of 50 at
-- any table size, newest first by the primary key `id`, which grows with creation: no index on
-- created_at is needed for the order. Each filter that can be rare gets an index in id order,
-- so a page reads 51 index entries of that filter however few jobs match it. Every index is an
-- entry written by each submit and each state change (never a HOT update), so the set is kept
-- small (docs/performance-dashboard.md has both sides measured):
--   - state and requester: the indexes of 0001 ordered by created_at are replaced by the same
--     columns ordered by id (equal lookups by quota checks and metrics are served the same);
--   - kind and origin group (a Discord server): new; the kind's also serves the median run time
--     of its last jobs (kind_lines, job_place), which read the whole table before;
--   - the text search has no index (a trigram GIN would cost every write): it searches within
--     the other filters' newest jobs, a bounded number at a time (jobs/engine/sql/job.sql).
DROP INDEX IF EXISTS job_state_recent;
DROP INDEX IF EXISTS job_requester_recent;
CREATE INDEX job_state_newest ON job (state, id);
CREATE INDEX job_requester_newest ON job (requester, id);
CREATE INDEX job_kind_newest ON job (kind, id);
CREATE INDEX job_group_newest ON job (origin_group, id) WHERE origin_group IS NOT NULL;

-- The time filter without an index on created_at: the first id of the jobs created at or after
-- `at`, found by bisection on the primary key (about 20 probes at a million jobs). A job's id is
-- taken inside the transaction whose start is its created_at, so ids follow creation times
-- except between transactions that overlap; the callers widen the bound by a margin longer than
-- any submitting transaction and keep the exact created_at test (job_search_*).
CREATE FUNCTION job_first_id_at(at timestamptz) RETURNS bigint
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    lo bigint;
    hi bigint;
    mid bigint;
    found bigint;
    made timestamptz;
BEGIN
    SELECT min(id), max(id) + 1 INTO lo, hi FROM job;
    IF lo IS NULL THEN
        RETURN 0;
    END IF;
    WHILE lo < hi LOOP
        mid := lo + (hi - lo) / 2;
        SELECT id, created_at INTO found, made FROM job WHERE id >= mid ORDER BY id LIMIT 1;
        IF found IS NULL OR made >= at THEN  -- NULL: the jobs past mid were pruned meanwhile
            hi := mid;
        ELSE
            lo := least(found + 1, hi);
        END IF;
    END LOOP;
    RETURN lo;
END
$$;

-- The jobs the operator's filters match (NULL means any), replacing 0011's job_matching: the
-- time bounds are also id bounds (job_first_id_at, widened by `margin`), so each filter's
-- index above reads only the jobs of the asked time. A plain SQL function, inlined into each
-- query that reads from it (jobs/engine/sql/job.sql: job_search_*), which is planned for each
-- call's values: a filter left NULL drops out of the plan.
CREATE FUNCTION job_listing(
    states job_state[], kind_is text, requester_is text, group_is text,
    since timestamptz, until timestamptz, margin interval
) RETURNS SETOF job LANGUAGE sql STABLE AS $$
    SELECT * FROM job
    WHERE (states IS NULL OR state = ANY(states))
      AND (kind_is IS NULL OR kind = kind_is)
      AND (requester_is IS NULL OR requester = requester_is)
      AND (group_is IS NULL OR origin_group = group_is)
      AND (since IS NULL OR (created_at >= since AND id >= job_first_id_at(since - margin)))
      AND (until IS NULL OR (created_at < until AND id < job_first_id_at(until + margin)))
$$;
DROP FUNCTION job_matching(job_state[], text, text, text, timestamptz, timestamptz, text);
