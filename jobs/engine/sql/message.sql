-- The mailbox: every message sent to a job (an answer, a follow-up, or a refused one), recorded
-- once per transport id. seq is given under the job's row lock, which every writer holds, so
-- seq order is commit order: a reader that has seen seq n has seen every message before it.

-- name: message_insert
-- Record a message, next in the job's mailbox (the caller holds the job's row lock); wakes the
-- job's running attempt (NOTIFY errand_mailbox, its id), which may be waiting for it.
WITH j AS (
    SELECT id, current_attempt_id FROM job WHERE id = :job_id
), ins AS (
    INSERT INTO job_message (job_id, seq, actor, sender, text, choice, question_id, refused,
                             transport_id)
    SELECT j.id, coalesce((SELECT max(seq) FROM job_message WHERE job_id = j.id), 0) + 1,
           :actor::job_actor, :sender, :text, :choice, :question_id, :refused, :transport_id
    FROM j
    RETURNING *
)
SELECT ins.*,
       (SELECT pg_notify('errand_mailbox', j.current_attempt_id::text) FROM j
        WHERE j.current_attempt_id IS NOT NULL AND ins.refused IS NULL)::text AS _notified
FROM ins;

-- name: message_by_transport_id
-- The message a transport already recorded under its id (a resent interaction), if any.
SELECT * FROM job_message WHERE transport_id = :transport_id;

-- name: message_list_by_job
-- A job's mailbox, in order.
SELECT * FROM job_message WHERE job_id = :job_id ORDER BY seq;

-- name: message_followups_after
-- A job's follow-ups (not answers, not refused) after :after (a seq), oldest first.
SELECT * FROM job_message
WHERE job_id = :job_id AND seq > :after AND question_id IS NULL AND refused IS NULL
ORDER BY seq
LIMIT :limit;
