-- Recurring schedules (docs/kinds.md, "Schedules"): each enqueues a job per tick of its cron
-- expression, read in its timezone. Every Errand process (worker or bot) runs the ticker; a
-- tick's job is made exactly once by its idempotency key, 'schedule:NAME:TICK' (the unique
-- index on job.idempotency_key), whoever makes it and however often it is tried.

CREATE TABLE schedule (
    name        text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
    -- 5 fields (minute ...), or 6 with seconds first; read by cronsim as Debian's cron does.
    cron        text NOT NULL,
    tz          text NOT NULL DEFAULT 'UTC',
    kind        text NOT NULL,
    params      jsonb NOT NULL DEFAULT '{}',
    priority    smallint CHECK (priority BETWEEN -10 AND 10),
    -- Where its jobs report (a Discord channel), as a transport writes a job's origin.
    origin      jsonb NOT NULL DEFAULT '{}',
    origin_group text,
    -- After downtime: 'skip' the ticks missed, or run the 'last' of them once.
    catch_up    text NOT NULL DEFAULT 'last' CHECK (catch_up IN ('skip', 'last')),
    paused_at   timestamptz,
    -- The next tick to enqueue, and the last one enqueued.
    next_at     timestamptz NOT NULL,
    last_tick   timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    created_by  text NOT NULL
);

CREATE INDEX schedule_due ON schedule (next_at) WHERE paused_at IS NULL;
