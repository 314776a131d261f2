-- Questions a job asked (ctx.ask): once per key and job, open until answered, timed out or
-- closed. Each change writes the question's event (question_event, migrations/0020_mailbox.sql):
-- a timeline entry, and a notice when the job has an origin. Every writer holds the job's row
-- lock, so an answer, a timeout and a cancel of one question take turns.

-- name: question_ask
-- Ask a question for the attempt holding the job's lease (locked here, fenced by the attempt):
-- a new, open question with its event; or the question of that key asked before (an attempt
-- asking again after a restart), as it now is. No row: the attempt lost the lease.
WITH j AS (
    SELECT id FROM job WHERE id = :job_id AND current_attempt_id = :attempt_id FOR UPDATE
), ins AS (
    INSERT INTO job_question (job_id, key, text, choices, allow_text, asked_by, expires_at)
    SELECT j.id, :key, :text, :choices::text[], :allow_text, :attempt_id,
           CASE WHEN :timeout_seconds::float8 IS NULL THEN NULL
                ELSE now() + make_interval(secs => :timeout_seconds) END
    FROM j
    ON CONFLICT (job_id, key) DO NOTHING
    RETURNING *
), asked AS (
    SELECT ins.*, NULL::text AS answer_text, NULL::text AS answered_by,
           NULL::integer AS answer_choice,
           question_event(ins.job_id, ins.id, 'worker', :attempt_id::bigint,
                          'asked: ' || left(ins.text, 300)) AS _noted
    FROM ins
)
SELECT id, job_id, key, text, choices, allow_text, asked_at, expires_at, status, closed_at,
       closed_reason, answer_text, answered_by, answer_choice
FROM asked
UNION ALL
SELECT q.id, q.job_id, q.key, q.text, q.choices, q.allow_text, q.asked_at, q.expires_at,
       q.status, q.closed_at, q.closed_reason, m.text, m.sender, m.choice
FROM job_question q LEFT JOIN job_message m ON m.id = q.answer_id
WHERE q.job_id = :job_id AND q.key = :key
  AND EXISTS (SELECT 1 FROM j) AND NOT EXISTS (SELECT 1 FROM ins);

-- name: question_find
-- One question of a job, with its answer: by id, by key, or (neither) the one to answer now:
-- an open one before others, the one the job waits for (:wait_key) first, then the oldest.
SELECT q.*, m.text AS answer_text, m.sender AS answered_by, m.choice AS answer_choice
FROM job_question q LEFT JOIN job_message m ON m.id = q.answer_id
WHERE q.job_id = :job_id
  AND (:question_id::bigint IS NULL OR q.id = :question_id)
  AND (:key::text IS NULL OR q.key = :key)
ORDER BY q.status = 'open' DESC, q.key IS NOT DISTINCT FROM :wait_key::text DESC, q.id
LIMIT 1;

-- name: question_list_by_job
-- A job's questions, oldest first, with their answers.
SELECT q.*, m.text AS answer_text, m.sender AS answered_by, m.choice AS answer_choice
FROM job_question q LEFT JOIN job_message m ON m.id = q.answer_id
WHERE q.job_id = :job_id
ORDER BY q.id;

-- name: question_answer
-- Record an open question's first valid answer (the message :message_id), with its event; the
-- caller holds the job's row lock. No row: it was not open.
WITH answered AS (
    UPDATE job_question SET status = 'answered', answer_id = :message_id, closed_at = now()
    WHERE id = :question_id AND status = 'open'
    RETURNING id, job_id
)
SELECT id, question_event(job_id, id, :actor::job_actor, NULL, :reason) AS _noted
FROM answered;

-- name: question_close
-- Close open questions as :status ('timed_out' or 'closed') with :reason, each with its event:
-- of each job in :job_ids, the one of the key at the same place in :keys (NULL: every open one),
-- or only :question_id when given. The caller holds the jobs' row locks. The questions closed.
WITH target AS (
    SELECT * FROM unnest(:job_ids::bigint[], :keys::text[]) AS t(job_id, key)
), closed AS (
    UPDATE job_question q SET status = :status, closed_at = now(), closed_reason = :reason
    FROM target t
    WHERE q.job_id = t.job_id AND (t.key IS NULL OR q.key = t.key) AND q.status = 'open'
      AND (:question_id::bigint IS NULL OR q.id = :question_id)
    RETURNING q.id, q.job_id
)
SELECT id, question_event(job_id, id, :actor::job_actor, :attempt_id::bigint, :reason) AS _noted
FROM closed;
