-- job.transport and job.partition (0013) become plain columns, which the statements that create
-- a job write from its origin (job_insert, job_insert_many and job_retry, jobs/engine/sql/job.sql)
-- with 0013's expressions, now the functions below. As stored generated columns PostgreSQL
-- computed them again on every UPDATE of a job (a claim, an end, a progress write), though only
-- the INSERT gives a job its origin and nothing changes it afterwards. Virtual generated columns
-- (PostgreSQL 18) spared the updates too, but made every single submit slower, as measured
-- when this was written. Existing values are kept: DROP EXPRESSION rewrites nothing.
CREATE FUNCTION origin_transport(origin jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT origin ->> 'transport'
$$;

CREATE FUNCTION origin_partition(origin jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN origin ->> 'partition' ~ '^-?[0-9]{1,18}$'
                THEN (origin ->> 'partition')::bigint ELSE 0 END
$$;

ALTER TABLE job
    ALTER COLUMN transport DROP EXPRESSION,
    ALTER COLUMN partition DROP EXPRESSION;

-- A writer that leaves them out (a release from before this one, still running during an
-- upgrade, or a hand-written INSERT) gets them filled from the origin as before; the statements
-- of this release always write them, so the trigger never runs for them (its WHEN is false).
CREATE FUNCTION job_origin_columns() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.transport := origin_transport(NEW.origin);
    NEW.partition := origin_partition(NEW.origin);
    RETURN NEW;
END
$$;

CREATE TRIGGER job_origin_columns BEFORE INSERT ON job
FOR EACH ROW WHEN (NEW.partition IS NULL)
EXECUTE FUNCTION job_origin_columns();
