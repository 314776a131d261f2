-- What operators did (operator_action, migrations/0022_operator_actions.sql) and the fleet's
-- processes (errand_process): the dashboard's reads and the writes behind them.
-- Each query starts with "-- name: NAME" and a line or two saying what it does.

-- name: operator_action_insert
-- Record one action of an operator (who, what, on which kind or job, its details).
INSERT INTO operator_action (by, action, kind, job_id, detail)
VALUES (:by, :action, :kind, :job_id, coalesce(:detail::jsonb, '{}'::jsonb))
RETURNING id;

-- name: operator_action_list
-- The latest actions, newest first, each with its job's public id (NULL: none, or pruned).
SELECT a.id, a.at, a.by, a.action, a.kind, a.detail, j.public_id
FROM operator_action a LEFT JOIN job j ON j.id = a.job_id
ORDER BY a.id DESC
LIMIT :limit;

-- name: operator_action_by_job
-- The actions taken on one job, oldest first.
SELECT a.id, a.at, a.by, a.action, a.kind, a.detail, NULL::text AS public_id
FROM operator_action a WHERE a.job_id = :job_id
ORDER BY a.id;

-- name: process_seen
-- A process's heartbeat: its row, created on the first.
INSERT INTO errand_process (name, roles, detail)
VALUES (:name, :roles, coalesce(:detail::jsonb, '{}'::jsonb))
ON CONFLICT (name) DO UPDATE SET roles = excluded.roles, detail = excluded.detail,
                                 seen_at = now();

-- name: process_gone
-- A process stops, and its row goes; a row not seen for :forget_seconds (a process killed) goes
-- with it.
DELETE FROM errand_process
WHERE name = :name OR seen_at < now() - make_interval(secs => :forget_seconds);

-- name: process_list
-- The fleet: every process with its last heartbeat and, for a worker, how many attempts it holds
-- now (attempt_live_by_worker).
SELECT p.name, p.roles, p.detail, p.started_at, p.seen_at,
       extract(epoch FROM now() - p.seen_at)::float8 AS seen_seconds_ago,
       (SELECT count(*) FROM attempt a WHERE a.worker = p.name AND a.ended_at IS NULL) AS running
FROM errand_process p
ORDER BY p.roles, p.name;

-- name: event_last_id
-- The newest event's id (0: none): where a reader of changes starts.
SELECT coalesce(max(id), 0) FROM event;

-- name: event_changes_since
-- Events after :after (the primary key's range), oldest first, each with its job's public id
-- and the state it moved the job to: what the dashboard's live updates send.
SELECT e.id, j.public_id, e.to_state::text AS state
FROM event e JOIN job j ON j.id = e.job_id
WHERE e.id > :after
ORDER BY e.id
LIMIT :limit;
