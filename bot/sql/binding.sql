-- A job's Discord binding: what delivery learned about it (its thread, its messages, what they
-- show, who renders it, what the /summon answer shows). Where the job was summoned is its
-- origin (job.origin, the one record of it), joined in where a round needs it. Each query starts
-- with "-- name: NAME" and a line or two on what it does; parameters are :name, loaded by
-- bot/queries.py with the engine's loader.

-- name: binding_insert
-- Record the /summon answer message (the thread's anchor); the first one recorded wins. Made by
-- the /summon handler right after it answers, or earlier by delivery without an anchor.
INSERT INTO discord_binding (job_id, anchor_message_id)
VALUES (:job_id, :anchor_message_id)
ON CONFLICT (job_id) DO UPDATE
    SET anchor_message_id = coalesce(discord_binding.anchor_message_id,
                                     excluded.anchor_message_id),
        updated_at = now();

-- name: binding_get
-- The binding of one job, or nothing yet.
SELECT * FROM discord_binding WHERE job_id = :job_id;

-- name: binding_take_render
-- Take (or renew) the right to render a job's progress message, making the job's binding if
-- the /summon handler has not yet; no row: another process renders it (or the job is gone).
-- With where the job was summoned (its origin) and when.
WITH taken AS (
    INSERT INTO discord_binding AS b (job_id, render_owner, render_until)
    SELECT id, :owner, now() + make_interval(secs => :lease_seconds) FROM job WHERE id = :job_id
    ON CONFLICT (job_id) DO UPDATE
        SET render_owner = excluded.render_owner, render_until = excluded.render_until
        WHERE b.render_owner IS NULL OR b.render_owner = excluded.render_owner
           OR b.render_until < now()
    RETURNING b.*
)
SELECT t.job_id, t.anchor_message_id, t.thread_id, t.progress_message_id,
       t.progress_posted_at, t.progress_state, t.progress_hash, t.answer_state,
       j.origin, j.created_at AS summoned_at
FROM taken t JOIN job j ON j.id = t.job_id;

-- name: binding_release_render
-- Give up every render lease of a process that is shutting down.
UPDATE discord_binding SET render_owner = NULL, render_until = NULL WHERE render_owner = :owner;

-- name: binding_set_thread
-- The thread (or DM, or existing thread) that follows the job.
UPDATE discord_binding SET thread_id = :thread_id, updated_at = now() WHERE job_id = :job_id;

-- name: binding_set_progress_message
-- The job's progress message (a new one replaces a deleted one; a forum post's first message
-- opens the post, :thread_id); its render starts afresh. Returns when it was posted.
UPDATE discord_binding
SET thread_id = coalesce(:thread_id, thread_id), progress_message_id = :message_id,
    progress_posted_at = now(), progress_state = :state, progress_hash = :hash,
    progress_edited_at = now(), updated_at = now()
WHERE job_id = :job_id
RETURNING progress_posted_at;

-- name: binding_record_edit
-- Record an edit of the progress message; refused (no row) once a terminal state ({terminal})
-- was shown.
UPDATE discord_binding
SET progress_state = :state, progress_hash = :hash, progress_edits = progress_edits + 1,
    progress_edited_at = now(), updated_at = now()
WHERE job_id = :job_id
  AND (progress_state IS NULL OR progress_state <> ALL({terminal}::job_state[]))
RETURNING job_id;

-- name: binding_set_answer_state
-- Record the state the /summon answer now shows.
UPDATE discord_binding SET answer_state = :state, updated_at = now() WHERE job_id = :job_id;

-- name: binding_job_by_thread
-- The newest job followed in a thread (for /job status without an id).
SELECT j.public_id FROM discord_binding b JOIN job j ON j.id = b.job_id
WHERE b.thread_id = :thread_id
ORDER BY b.job_id DESC
LIMIT 1;

-- name: binding_by_public_id
-- A job's internal id and delivery partition, when it has a Discord binding (progress NOTIFYs
-- carry the public id).
SELECT b.job_id, j.partition
FROM discord_binding b JOIN job j ON j.id = b.job_id
WHERE j.public_id = :public_id;

-- name: job_answer_states
-- The state and kind of the jobs whose live /summon answers this process follows.
SELECT id, state, kind FROM job WHERE id = ANY(:ids::bigint[]);
