-- Events: every state change of a job (its timeline), and, for a job with an origin, each one
-- a notice to deliver to its transport (migrations/0009_notices_are_events.sql). A notice's
-- delivery state lives on its event: notice_at (when next due), delivery_attempts,
-- delivered_at or dead_at, delivery_error, external_id (what the transport created), and the
-- lease (lease_owner, lease_token) that fences every write about it. Rows of one job are
-- delivered in order; a job whose oldest row waits (backoff) holds only its own later rows.
-- The predicates "notice_at IS NOT NULL AND delivered_at IS NULL AND dead_at IS NULL" are
-- those of the partial index event_notice_pending.

-- name: event_list_by_job
-- A job's events, oldest first.
SELECT * FROM event WHERE job_id = :job_id ORDER BY id;

-- name: event_resolved_retry_since
-- Whether a person resolved the job from unknown to a retry (queued) after a moment (an
-- effect's intent).
SELECT EXISTS (
    SELECT 1 FROM event
    WHERE job_id = :job_id AND from_state = 'unknown' AND to_state = 'queued' AND NOT ignored
      AND at > :since
);

-- name: notice_due_jobs
-- Jobs of one transport with a pending notice due now, oldest first; with a partition count
-- (:partitions > 0), only jobs whose partition modulo it is one of :mine (a sharded transport
-- delivers the jobs of its own shards; a job without a partition belongs to 0). transport and
-- partition are the job's typed columns, generated from its origin (migration 0013).
-- Each pending notice's job is read by primary key (the lateral lookup; OFFSET 0 keeps it one):
-- joined plainly, the planner hashed the whole job table on every poll.
SELECT e.job_id, j.public_id, min(e.id) AS first_id
FROM event e
CROSS JOIN LATERAL (
    SELECT public_id, transport, partition FROM job WHERE job.id = e.job_id OFFSET 0
) j
WHERE e.notice_at IS NOT NULL AND e.delivered_at IS NULL AND e.dead_at IS NULL
  AND e.notice_at <= now()
  AND j.transport = :transport
  AND (:partitions = 0 OR mod(j.partition, :partitions) = ANY(:mine::bigint[]))
GROUP BY e.job_id, j.public_id
ORDER BY min(e.id)
LIMIT :limit;

-- name: notice_round
-- What one delivery round of a job works from, in one statement: its pending notices leased in
-- id order (when :claim, and only when its oldest pending one is due), and the job as it is
-- now, with the names and sizes of its assets and its run time (job_run_time). One row per
-- leased notice (its columns n_*), or one row whose n_id is NULL; no row when the job is gone. The job is read in the statement's
-- snapshot, in which every leased notice's transition had committed: the job shown is at least
-- as new as each notice. Without :claim it is a plain read of the job (nothing is locked).
WITH pending AS (
    SELECT id, notice_at FROM event
    WHERE job_id = :job_id AND :claim
      AND notice_at IS NOT NULL AND delivered_at IS NULL AND dead_at IS NULL
    ORDER BY id
    FOR UPDATE SKIP LOCKED
), gate AS (
    SELECT notice_at <= now() AS due FROM pending ORDER BY id LIMIT 1
), leased AS (
    UPDATE event e SET notice_at = now() + make_interval(secs => :lease_seconds),
                       delivery_attempts = e.delivery_attempts + 1,
                       lease_owner = :owner, lease_token = gen_random_uuid()
    FROM pending p
    WHERE e.id = p.id AND (SELECT due FROM gate)
    RETURNING e.id, e.job_id, e.from_state, e.to_state, e.actor, e.reason, e.at,
              e.data ->> 'by' AS by, e.data ->> 'note' AS note,
              e.delivery_attempts, e.delivered_at, e.dead_at, e.delivery_error, e.external_id,
              e.notice_at, e.lease_token, e.topic, e.question_id
)
SELECT j.id, j.public_id, j.kind, j.params, j.requester, j.origin, j.origin_group, j.state,
       j.reason, j.result, j.error, j.attempts, j.max_attempts, j.current_attempt_id, j.run_at,
       j.deadline_at, j.cancel_requested_at, j.cancel_requested_by, j.cancel_reason, j.progress,
       j.usage, j.created_at, j.updated_at, j.started_at, j.finished_at, j.failures, j.priority,
       j.wait_for, j.wait_key, j.wait_text, j.wait_until, j.wait_since, j.retry_of,
       j.traceparent, r.run_seconds, r.heartbeat_at,
       coalesce(a.names, '{}') AS asset_names, coalesce(a.sizes, '{}') AS asset_sizes,
       n.id AS n_id, n.job_id AS n_job_id, n.from_state AS n_from_state,
       n.to_state AS n_to_state, n.actor AS n_actor, n.reason AS n_reason, n.at AS n_at,
       n.by AS n_by, n.note AS n_note,
       n.delivery_attempts AS n_delivery_attempts, n.delivered_at AS n_delivered_at,
       n.dead_at AS n_dead_at, n.delivery_error AS n_delivery_error,
       n.external_id AS n_external_id, n.notice_at AS n_notice_at,
       n.lease_token AS n_lease_token, n.topic AS n_topic,
       -- A question's notice carries the question as it is now, with its answer, and what the
       -- transport made of it (the message its first delivered notice posted).
       q.id AS q_id, q.job_id AS q_job_id, q.key AS q_key, q.text AS q_text,
       q.choices AS q_choices, q.allow_text AS q_allow_text, q.asked_at AS q_asked_at,
       q.expires_at AS q_expires_at, q.status AS q_status, q.closed_at AS q_closed_at,
       q.closed_reason AS q_closed_reason, qm.text AS q_answer_text,
       qm.sender AS q_answered_by, qm.choice AS q_answer_choice,
       (SELECT e.external_id FROM event e
        WHERE e.job_id = j.id AND e.question_id = q.id AND e.delivered_at IS NOT NULL
        ORDER BY e.id LIMIT 1) AS q_shown_as
FROM job j
CROSS JOIN LATERAL (
    SELECT array_agg(name ORDER BY id) AS names, array_agg(size ORDER BY id) AS sizes
    FROM asset WHERE asset.job_id = j.id
) a
CROSS JOIN LATERAL job_run_time(j.id, j.current_attempt_id) r
LEFT JOIN leased n ON true
LEFT JOIN job_question q ON q.id = n.question_id
LEFT JOIN job_message qm ON qm.id = q.answer_id
WHERE j.id = :job_id
ORDER BY n.id;

-- name: notice_done
-- Record a delivery and what the transport created (e.g. the Discord message id); fenced by the
-- lease token, so no row: the lease was lost to another process.
UPDATE event SET delivered_at = now(), external_id = :external_id, delivery_error = NULL
WHERE id = :id AND notice_at IS NOT NULL AND delivered_at IS NULL AND lease_token = :lease_token
RETURNING id;

-- name: notice_retry
-- Put a notice back for a later try (backoff), keeping the error; counts as a failed attempt.
UPDATE event SET notice_at = now() + make_interval(secs => :delay), delivery_error = :error,
                 lease_owner = NULL, lease_token = NULL
WHERE id = :id AND notice_at IS NOT NULL AND delivered_at IS NULL AND dead_at IS NULL
  AND lease_token = :lease_token
RETURNING id;

-- name: notice_release
-- Hand leased notices back without counting an attempt (the transport was not ready yet).
UPDATE event SET notice_at = now() + make_interval(secs => :delay),
                 delivery_attempts = greatest(delivery_attempts - 1, 0),
                 lease_owner = NULL, lease_token = NULL
WHERE id = ANY(:ids::bigint[])
  AND notice_at IS NOT NULL AND delivered_at IS NULL AND dead_at IS NULL
  AND lease_token = ANY(:lease_tokens::uuid[]);

-- name: notice_dead
-- Give up on a notice: dead-lettered with the reason, visible in status and the CLI.
UPDATE event SET dead_at = now(), delivery_error = :error, lease_owner = NULL, lease_token = NULL
WHERE id = :id AND notice_at IS NOT NULL AND delivered_at IS NULL AND dead_at IS NULL
  AND lease_token = :lease_token
RETURNING id;

-- name: notice_list_by_job
-- A job's notices, oldest first (delivery state for status pages and the timeline).
SELECT id, job_id, from_state, to_state, actor, reason, at, data ->> 'by' AS by,
       data ->> 'note' AS note, delivery_attempts, delivered_at, dead_at, delivery_error,
       external_id, lease_token, notice_at, topic
FROM event WHERE job_id = :job_id AND notice_at IS NOT NULL ORDER BY id;

-- name: notice_counts
-- Undelivered notices: pending and dead-lettered, and the age of the oldest pending one. Each
-- part reads its own partial index (event_notice_pending, event_notice_dead).
WITH pending AS (
    SELECT count(*) AS n, min(at) AS oldest FROM event
    WHERE notice_at IS NOT NULL AND delivered_at IS NULL AND dead_at IS NULL
)
SELECT p.n AS pending,
       (SELECT count(*) FROM event
        WHERE notice_at IS NOT NULL AND delivered_at IS NULL AND dead_at IS NOT NULL) AS dead,
       coalesce(extract(epoch FROM now() - p.oldest), 0)::float8 AS oldest_pending_seconds
FROM pending p;

-- name: notice_list
-- Notices by status ('dead', 'pending', 'delivered', or NULL for any), newest first.
SELECT e.id, j.public_id, j.kind, e.job_id, e.from_state, e.to_state, e.actor, e.reason, e.at,
       e.data ->> 'by' AS by, e.data ->> 'note' AS note,
       e.notice_at, e.delivery_attempts, e.delivered_at, e.dead_at, e.delivery_error,
       e.external_id, e.lease_token, e.topic
FROM event e JOIN job j ON j.id = e.job_id
WHERE e.notice_at IS NOT NULL
  AND (:status::text IS NULL
       OR (:status = 'dead' AND e.dead_at IS NOT NULL AND e.delivered_at IS NULL)
       OR (:status = 'pending' AND e.dead_at IS NULL AND e.delivered_at IS NULL)
       OR (:status = 'delivered' AND e.delivered_at IS NOT NULL))
  AND (:public_id::text IS NULL OR j.public_id = :public_id)
ORDER BY e.id DESC
LIMIT :limit;

-- name: notice_retry_dead
-- Give dead-lettered notices another delivery: clear dead_at, reset attempts, due now; wakes
-- the delivery loop. :ids NULL means every dead notice. Returns the ids revived.
WITH revived AS (
    UPDATE event SET dead_at = NULL, delivery_attempts = 0, notice_at = now(),
                     delivery_error = NULL
    WHERE notice_at IS NOT NULL AND dead_at IS NOT NULL AND delivered_at IS NULL
      AND (:ids::bigint[] IS NULL OR id = ANY(:ids))
    RETURNING id
)
SELECT id, pg_notify('errand_outbox', '')::text AS _notified FROM revived ORDER BY id;

-- name: notice_get_many
-- Notices by id, with whether each is dead-lettered (to refuse a retry of anything else).
SELECT id, (dead_at IS NOT NULL AND delivered_at IS NULL) AS dead FROM event
WHERE id = ANY(:ids::bigint[]) AND notice_at IS NOT NULL;
