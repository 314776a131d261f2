-- Recurring schedules (migrations/0017_schedules.sql) and the ticker's reads and writes.
-- Each query starts with "-- name: NAME" and a line or two saying what it does.

-- name: schedule_insert
-- A new schedule; NULL when the name is taken.
INSERT INTO schedule (name, cron, tz, kind, params, priority, origin, origin_group, catch_up,
                      next_at, created_by)
VALUES (:name, :cron, :tz, :kind, :params, :priority, :origin, :origin_group, :catch_up,
        :next_at, :created_by)
ON CONFLICT (name) DO NOTHING
RETURNING *;

-- name: schedule_list
-- Every schedule, by name.
SELECT * FROM schedule ORDER BY name;

-- name: schedule_get
-- One schedule by name.
SELECT * FROM schedule WHERE name = :name;

-- name: schedule_set_paused
-- Pause a schedule (no ticks enqueued) or resume it from :next_at (its next tick from now:
-- ticks while it was paused are not made up).
UPDATE schedule SET
    paused_at = CASE WHEN :paused::boolean THEN coalesce(paused_at, now()) END,
    next_at = coalesce(:next_at::timestamptz, next_at)
WHERE name = :name
RETURNING *;

-- name: schedule_delete
-- Remove a schedule (the jobs it made stay).
DELETE FROM schedule WHERE name = :name RETURNING name;

-- name: schedule_any_due
-- Whether any schedule has a tick due by :now: the ticker's round opens a transaction only then.
SELECT EXISTS (SELECT 1 FROM schedule
               WHERE paused_at IS NULL AND next_at <= coalesce(:now::timestamptz, now()));

-- name: schedule_due
-- Schedules with a tick due by :now, locked so one ticker at a time enqueues each (others skip
-- it); the database's clock unless a test brings its own.
SELECT *, coalesce(:now::timestamptz, now()) AS checked_at FROM schedule
WHERE paused_at IS NULL AND next_at <= coalesce(:now::timestamptz, now())
ORDER BY next_at
LIMIT :limit
FOR UPDATE SKIP LOCKED;

-- name: schedule_advance
-- A schedule's ticks up to :last_tick are enqueued; the next is :next_at.
UPDATE schedule SET next_at = :next_at, last_tick = coalesce(:last_tick, last_tick)
WHERE name = :name;
