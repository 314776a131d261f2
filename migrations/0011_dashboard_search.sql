-- The operator dashboard's job list: one index per filter, each ordered as the list is
-- (newest first), so a page of 50 reads 50 index entries at any table size; and a trigram index
-- for the text search over the task and the parameters.
CREATE INDEX job_kind_recent ON job (kind, created_at DESC, id DESC);
CREATE INDEX job_group_recent ON job (origin_group, created_at DESC, id DESC)
    WHERE origin_group IS NOT NULL;
CREATE INDEX job_recent ON job (created_at DESC, id DESC);

-- What the search reads of a job: its task, as the requester wrote it, and its parameters.
CREATE FUNCTION job_search_text(origin jsonb, params jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce(origin->>'task', '') || ' ' || params::text;

-- The jobs the operator's filters match (NULL means any). A plain SQL function, so the planner
-- inlines it into each query that reads from it and still uses the indexes above for the
-- query's own order and cursor (jobs/engine/sql/job.sql: job_search_*).
CREATE FUNCTION job_matching(
    states job_state[], kind_is text, requester_is text, group_is text,
    since timestamptz, until timestamptz, search text
) RETURNS SETOF job LANGUAGE sql STABLE AS $$
    SELECT * FROM job
    WHERE (states IS NULL OR state = ANY(states))
      AND (kind_is IS NULL OR kind = kind_is)
      AND (requester_is IS NULL OR requester = requester_is)
      AND (group_is IS NULL OR origin_group = group_is)
      AND (since IS NULL OR created_at >= since)
      AND (until IS NULL OR created_at < until)
      AND (search IS NULL OR job_search_text(origin, params) ILIKE '%' || search || '%')
$$;

-- pg_trgm ships with PostgreSQL's contrib; a server without it (or a role that may not create
-- it) still gets every other index, and the search then scans.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
    CREATE INDEX job_search_trgm ON job USING gin (job_search_text(origin, params) gin_trgm_ops);
EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
    RAISE NOTICE 'pg_trgm is not available: the dashboard''s text search scans';
END
$$;
