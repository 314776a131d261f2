-- A notice is an event: the outbox becomes a view over the events of transported jobs
-- (docs/state-machine.md, "The outbox").
--
-- Every outbox row was written in the same statement as one event, for that event, with a
-- payload made of that event's from, to and reason. Two rows per transition said one thing
-- twice: the outbox row was a heap row and three index entries for every transition of a
-- transported job (a third of a bulk submit's server time, and a share of every claim and
-- finish). Now the event carries its own delivery state, for one index entry (the pending
-- notices'), a heap row and two entries fewer per transition:
--   notice_at IS NULL      the event is no notice (its job has no origin, or it was ignored);
--   notice_at              when the notice is next due (its backoff), as outbox.available_at was;
--   delivered_at, dead_at  delivered, or given up on; the rest is the delivery's bookkeeping.
-- The view `outbox` keeps the columns transports and operators read and write: it is a simple
-- view, so delivery's UPDATE ... RETURNING and FOR UPDATE SKIP LOCKED act on the event rows.
-- A notice's id is now its event's id (delivery's Discord nonces changed prefix with it, see
-- bot/delivery.py). This migration is not additive: stop every process of the previous release
-- first (docs/deploy.md, "Upgrading").

ALTER TABLE event
    ADD COLUMN notice_at timestamptz,
    ADD COLUMN delivery_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN delivered_at timestamptz,
    ADD COLUMN dead_at timestamptz,
    ADD COLUMN delivery_error text,
    -- What the transport created (e.g. a Discord message id), recorded on delivery.
    ADD COLUMN external_id text,
    ADD COLUMN lease_owner text,
    ADD COLUMN lease_token uuid;

DO $$
BEGIN
    -- By construction every outbox row has its event, and no event two rows; refuse to lose a
    -- row that would not.
    IF EXISTS (SELECT 1 FROM outbox o
               WHERE o.event_id IS NULL
                  OR NOT EXISTS (SELECT 1 FROM event e WHERE e.id = o.event_id))
    THEN
        RAISE EXCEPTION 'outbox rows without their event: deliver or delete them, then migrate';
    END IF;
    IF EXISTS (SELECT 1 FROM outbox GROUP BY event_id HAVING count(*) > 1) THEN
        RAISE EXCEPTION 'events with several outbox rows: deliver or delete them, then migrate';
    END IF;
END
$$;

UPDATE event e SET
    notice_at = o.available_at,
    delivery_attempts = o.attempts,
    delivered_at = o.delivered_at,
    dead_at = o.dead_at,
    delivery_error = o.last_error,
    external_id = o.external_id,
    lease_owner = o.lease_owner,
    lease_token = o.lease_token
FROM outbox o
WHERE o.event_id = e.id;

DROP TABLE outbox;

CREATE VIEW outbox AS
SELECT id, job_id, id AS event_id, 'transition'::text AS topic,
       jsonb_build_object('from', from_state, 'to', to_state, 'reason', reason) AS payload,
       at AS created_at, notice_at AS available_at, delivery_attempts AS attempts,
       delivered_at, dead_at, delivery_error AS last_error, external_id, lease_owner, lease_token
FROM event
WHERE notice_at IS NOT NULL
-- A write through the view cannot make a notice vanish from it (available_at = NULL).
WITH CASCADED CHECK OPTION;

-- The pending notices, as outbox_pending indexed them, and the dead letters (few; for the
-- metrics, `errand outbox list` and `retry --all-dead`, which would otherwise read every event);
-- a job's notices are reached through event_by_job (job_id, id).
CREATE INDEX event_notice_pending ON event (notice_at, id)
    WHERE notice_at IS NOT NULL AND delivered_at IS NULL AND dead_at IS NULL;
CREATE INDEX event_notice_dead ON event (id)
    WHERE notice_at IS NOT NULL AND delivered_at IS NULL AND dead_at IS NOT NULL;
