-- What the dashboard reads of the Discord transport's own tables (migrations 0003, 0013).
-- Each query starts with "-- name: NAME" and a line or two saying what it does.

-- name: discord_thread
-- The thread delivery made for a job (NULL until it made one), for the job page's link.
SELECT thread_id FROM discord_binding WHERE job_id = :job_id;
