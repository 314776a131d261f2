-- Named SQL of the Discord transport. Each query starts with "-- name: NAME" and a one-line
-- description; bot/queries.py loads them and a test checks every name used exists.

-- name: binding_insert
-- Record where a job was summoned and its answer message (the thread's anchor); first one wins.
INSERT INTO discord_binding (job_id, guild_id, channel_id, channel_type, anchor_message_id)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (job_id) DO UPDATE
    SET anchor_message_id = coalesce(discord_binding.anchor_message_id,
                                     excluded.anchor_message_id),
        updated_at = now()
RETURNING *;

-- name: binding_get
-- The binding of one job, or nothing yet.
SELECT * FROM discord_binding WHERE job_id = $1;

-- name: binding_set_thread
-- The thread (or DM, or existing thread) that follows the job.
UPDATE discord_binding SET thread_id = $2, updated_at = now() WHERE job_id = $1 RETURNING *;

-- name: binding_set_progress_message
-- The job's progress message (a new one replaces a deleted one); its render starts afresh.
UPDATE discord_binding
SET progress_message_id = $2, progress_posted_at = now(), progress_state = $3,
    progress_hash = $4, progress_edited_at = now(), updated_at = now()
WHERE job_id = $1
RETURNING *;

-- name: binding_record_edit
-- Record an edit of the progress message; refused (no row) once a terminal state ($4, from
-- jobs' TERMINAL) was shown.
UPDATE discord_binding
SET progress_state = $2, progress_hash = $3, progress_edits = progress_edits + 1,
    progress_edited_at = now(), updated_at = now()
WHERE job_id = $1
  AND (progress_state IS NULL OR progress_state <> ALL($4::job_state[]))
RETURNING *;

-- name: binding_job_by_thread
-- The newest job followed in a thread (for /job status without an id).
SELECT j.public_id FROM discord_binding b JOIN job j ON j.id = b.job_id
WHERE b.thread_id = $1
ORDER BY b.job_id DESC
LIMIT 1;

-- name: binding_by_public_id
-- A job's internal id and delivery partition, when it has a Discord binding (progress NOTIFYs
-- carry the public id).
SELECT b.job_id, coalesce((j.origin ->> 'partition')::bigint, 0) AS partition
FROM discord_binding b JOIN job j ON j.id = b.job_id
WHERE j.public_id = $1;

-- name: command_sync_get
-- The hash of the command payload last synced to this scope.
SELECT hash FROM discord_command_sync WHERE scope = $1;

-- name: command_sync_set
-- Remember the command payload just synced to this scope.
INSERT INTO discord_command_sync (scope, hash) VALUES ($1, $2)
ON CONFLICT (scope) DO UPDATE SET hash = excluded.hash, synced_at = now();

-- name: binding_take_render
-- Take (or renew) the right to render a job's progress message; no row: another process has it.
UPDATE discord_binding
SET render_owner = $2, render_until = now() + make_interval(secs => $3)
WHERE job_id = $1 AND (render_owner IS NULL OR render_owner = $2 OR render_until < now())
RETURNING *;

-- name: binding_release_render
-- Give up every render lease of a process that is shutting down.
UPDATE discord_binding SET render_owner = NULL, render_until = NULL WHERE render_owner = $1;

-- name: binding_set_answer_state
-- Record the state the /summon answer now shows.
UPDATE discord_binding SET answer_state = $2, updated_at = now() WHERE job_id = $1;

-- name: job_states_by_id
-- The current state of some jobs (the live /summon answers one process follows).
SELECT id, state::text AS state FROM job WHERE id = ANY($1::bigint[]);
