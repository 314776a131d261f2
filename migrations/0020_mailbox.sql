-- Jobs that talk back (docs/state-machine.md, "Waiting"; docs/kinds.md, "Questions, messages
-- and waits"): what a waiting job waits for, the questions a job asks, the messages sent to it
-- (its mailbox), and the events that tell a transport about a question.

-- The job's last park: what it waited for ('question', 'message' or 'time'), the question's
-- key and words, until when (NULL: no timer; the deadline still applies), since when, and which
-- of its handler's waits it was, counted from the handler's last checkpoint (so the attempt that
-- resumes it knows which wait to return from). Read as "what it waits for" while the job is
-- waiting; kept after it leaves (its next attempt reads it), cleared by the next checkpoint.
-- mailbox_read: how far into its mailbox the handler's checkpoint has read (a message's seq),
-- saved with the checkpoint, so a resumed attempt sees each message once.
ALTER TABLE job
    ADD COLUMN wait_for text CHECK (wait_for IN ('question', 'message', 'time')),
    ADD COLUMN wait_key text,
    ADD COLUMN wait_text text,
    ADD COLUMN wait_until timestamptz,
    ADD COLUMN wait_since timestamptz,
    ADD COLUMN wait_number integer,
    ADD COLUMN mailbox_read bigint NOT NULL DEFAULT 0;

ALTER TABLE job ADD CONSTRAINT job_waiting_says_for_what
    CHECK (state <> 'waiting' OR (wait_for IS NOT NULL AND wait_since IS NOT NULL));

-- Time an attempt spent waiting in its process for a person (an answer, a message): not the
-- handler's own time, so not counted toward the job's time bound (budget job_seconds).
ALTER TABLE attempt ADD COLUMN waited_seconds float8 NOT NULL DEFAULT 0
    CHECK (waited_seconds >= 0);

-- The timers the reaper moves (reaper_due, job_waits_due): few rows, read every round.
CREATE INDEX job_wait_due ON job (wait_until) WHERE state = 'waiting' AND wait_until IS NOT NULL;

-- A deadline now also ends a waiting job (policy.DEADLINE): the index the reaper reads covers it.
DROP INDEX job_deadline;
CREATE INDEX job_deadline ON job (deadline_at)
    WHERE deadline_at IS NOT NULL AND state IN ('queued', 'running', 'waiting');

-- A question a handler asked (ctx.ask), once per key and job: asked again after a restart, the
-- same row answers. open -> answered (its first valid answer, answer_id), timed_out (no answer
-- by expires_at) or closed (the job was cancelled or ended first). Rare writes: foreign keys.
CREATE TABLE job_question (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id        bigint NOT NULL REFERENCES job (id) ON DELETE CASCADE,
    key           text NOT NULL,
    text          text NOT NULL,
    choices       text[] NOT NULL DEFAULT '{}',
    -- Whether words of one's own are an answer (always, when there are no choices).
    allow_text    boolean NOT NULL,
    asked_by      bigint NOT NULL,  -- the attempt that first asked it
    asked_at      timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    status        text NOT NULL DEFAULT 'open'
                  CHECK (status IN ('open', 'answered', 'timed_out', 'closed')),
    answer_id     bigint,
    closed_at     timestamptz,
    closed_reason text,
    UNIQUE (job_id, key),
    CONSTRAINT job_question_answered_has_answer CHECK ((status = 'answered') = (answer_id IS NOT NULL)),
    CONSTRAINT job_question_open_iff_not_closed CHECK ((status = 'open') = (closed_at IS NULL))
);

-- The mailbox: every message sent to a job, recorded once. seq is its place in the job's
-- mailbox, given under the job's row lock (every writer takes it), so seq order is commit order
-- and a reader that has seen seq n has seen every earlier one. An answer names its question;
-- a refused one (the question was answered already, or closed) says why and reaches nobody.
-- transport_id: the transport's id of what carried it (a Discord interaction or message), so a
-- resent one is recorded once.
CREATE TABLE job_message (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES job (id) ON DELETE CASCADE,
    seq          bigint NOT NULL CHECK (seq >= 1),
    actor        job_actor NOT NULL CHECK (actor IN ('requester', 'operator')),
    sender       text NOT NULL,
    text         text NOT NULL,
    -- A choice answer: the index of the choice (text holds its words); NULL for free text.
    choice       integer,
    question_id  bigint REFERENCES job_question (id) ON DELETE CASCADE,
    refused      text,
    transport_id text UNIQUE,
    at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (job_id, seq),
    CONSTRAINT job_message_choice_answers CHECK (choice IS NULL OR question_id IS NOT NULL)
);

-- A question's events (asked, answered, timed out, closed) are on the job's timeline and, for a
-- job with an origin, notices: the transport posts the question, then shows how it ended. They
-- change no state (from_state = to_state = the job's state then). Existing events are all
-- transitions: the default fills them without a rewrite, and the check is added without a scan.
ALTER TABLE event
    ADD COLUMN topic text NOT NULL DEFAULT 'transition',
    ADD COLUMN question_id bigint;
ALTER TABLE event ADD CONSTRAINT event_topic_check
    CHECK (topic IN ('transition', 'question') AND (topic = 'question') = (question_id IS NOT NULL))
    NOT VALID;

CREATE OR REPLACE VIEW outbox AS
SELECT id, job_id, id AS event_id, topic,
       jsonb_build_object('from', from_state, 'to', to_state, 'reason', reason) AS payload,
       at AS created_at, notice_at AS available_at, delivery_attempts AS attempts,
       delivered_at, dead_at, delivery_error AS last_error, external_id, lease_owner, lease_token
FROM event
WHERE notice_at IS NOT NULL
WITH CASCADED CHECK OPTION;

-- A question's event (asked, answered, timed out, closed), written by the statement that changes
-- the question: on the job's timeline, and a notice when the job has an origin (its transport
-- shows the question), with the wake-up of the transports' delivery.
CREATE FUNCTION question_event(of_job bigint, question bigint, who job_actor, attempt bigint,
                               why text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    transported boolean;
BEGIN
    INSERT INTO event (job_id, from_state, to_state, actor, attempt_id, reason, notice_at, topic,
                       question_id)
    SELECT j.id, j.state, j.state, who, attempt, why,
           CASE WHEN j.origin <> '{}'::jsonb THEN now() END, 'question', question
    FROM job j WHERE j.id = of_job
    RETURNING notice_at IS NOT NULL INTO transported;
    IF transported THEN
        PERFORM pg_notify('errand_outbox', '');
    END IF;
    RETURN coalesce(transported, false);
END
$$;
