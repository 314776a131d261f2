-- A job's origin (the jsonb its transport wrote at submit) is the one record of where it came
-- from. What the engine filters on becomes a typed column derived from it, and the Discord
-- binding stops repeating it (docs/architecture.md, "One job, from /summon to its last notice").
--
-- job.transport and job.partition are generated from the origin, so they are filled for every
-- existing job by this statement and can never disagree with the origin afterwards; no writer
-- changes. transport is origin.transport (NULL without one: no transport delivers the job's
-- notices). partition is origin.partition, 0 when absent, as the outbox poll read it until now
-- ("a job without a partition belongs to 0"); a value that is not an integer is 0 too, where
-- the poll's cast used to fail for every job at once. Adding a stored generated column rewrites
-- the job table under its exclusive lock: docs/deploy.md, "Upgrading".
--
-- No index comes with them. The outbox poll (notice_due_jobs) starts from the pending notices
-- (event_notice_pending) and reads each one's job by primary key, so the filter reads the two
-- columns from the row it already has; an index on them would cost every submit an entry and
-- serve no statement.

ALTER TABLE job
    ADD COLUMN transport text GENERATED ALWAYS AS (origin ->> 'transport') STORED,
    ADD COLUMN partition bigint GENERATED ALWAYS AS (
        CASE WHEN origin ->> 'partition' ~ '^-?[0-9]{1,18}$'
             THEN (origin ->> 'partition')::bigint ELSE 0 END
    ) STORED;

-- discord_binding keeps only what delivery learns (thread, messages, what they show, the render
-- lease, what the /summon answer shows). Its guild_id, channel_id and channel_type were copied
-- from the origin when the binding was made; where an origin lacks one or says otherwise (no
-- release wrote such a job, but the binding is what delivery followed), the binding's value is
-- written into the origin first, so every job keeps the place its messages went to.
UPDATE job j
SET origin = j.origin || jsonb_build_object(
    'guild_id', b.guild_id, 'channel_id', b.channel_id, 'channel_type', b.channel_type)
FROM discord_binding b
WHERE b.job_id = j.id
  AND NOT j.origin @> jsonb_build_object(
      'guild_id', b.guild_id, 'channel_id', b.channel_id, 'channel_type', b.channel_type);

ALTER TABLE discord_binding
    DROP COLUMN guild_id,
    DROP COLUMN channel_id,
    DROP COLUMN channel_type;
