-- One bot process at a time renders a job's progress message: during a rolling restart two
-- processes deliver at once, and two renderers could otherwise overwrite a terminal state with
-- a stale one. The lease is renewed every delivery round and released on a clean shutdown.

ALTER TABLE discord_binding
    ADD COLUMN render_owner text,
    ADD COLUMN render_until timestamptz;
