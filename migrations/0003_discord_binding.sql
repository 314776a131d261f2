-- The Discord transport's record: which thread and progress message follow each job, and the
-- hash of the last application-command payload synced (so commands sync only when they change).
-- Delivery of notices uses the outbox's own columns (attempts, delivered_at, dead_at,
-- last_error, external_id = the Discord message id).

CREATE TABLE discord_binding (
    job_id               bigint PRIMARY KEY REFERENCES job (id) ON DELETE CASCADE,
    -- Where the job was summoned; channel_type is Discord's channel type number.
    guild_id             text,
    channel_id           text NOT NULL,
    channel_type         integer NOT NULL,
    -- The public answer to /summon: the message a thread is started from.
    anchor_message_id    text,
    -- The thread (or DM, or the thread the job was summoned in) that follows the job.
    thread_id            text,
    progress_message_id  text,
    -- When the progress message was posted: Discord limits edits of messages older than 1 h.
    progress_posted_at   timestamptz,
    -- The last rendered state and a hash of the last rendered content (skip unchanged edits).
    progress_state       job_state,
    progress_hash        text,
    progress_edits       integer NOT NULL DEFAULT 0,
    progress_edited_at   timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX discord_binding_progress ON discord_binding (progress_message_id);
CREATE INDEX discord_binding_thread ON discord_binding (thread_id);

CREATE TABLE discord_command_sync (
    -- "<application id>:<guild id or global>"
    scope     text PRIMARY KEY,
    hash      text NOT NULL,
    synced_at timestamptz NOT NULL DEFAULT now()
);
