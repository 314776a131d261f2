-- The job record: job, attempt, event, effect and outbox.
-- States and actors mirror jobs/state.py (a test checks the enums against it).

CREATE TYPE job_state AS ENUM
    ('queued', 'running', 'cancelling', 'succeeded', 'failed', 'cancelled', 'unknown');
CREATE TYPE job_actor AS ENUM ('requester', 'worker', 'system', 'operator');

CREATE TABLE job (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id           text NOT NULL UNIQUE CHECK (public_id ~ '^[a-z0-9]{1,12}$'),
    kind                text NOT NULL,
    params              jsonb NOT NULL DEFAULT '{}',
    requester           text NOT NULL,
    -- Opaque transport data (guild, channel, interaction...); the engine never reads inside it.
    origin              jsonb NOT NULL DEFAULT '{}',
    -- The quota group of the origin (a Discord guild), or NULL.
    origin_group        text,
    idempotency_key     text UNIQUE,
    state               job_state NOT NULL DEFAULT 'queued',
    reason              text,
    result              jsonb,
    error               jsonb,
    attempts            integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts        integer NOT NULL DEFAULT 1 CHECK (max_attempts >= 1),
    -- The fencing token: the attempt that holds the lease while running or cancelling.
    current_attempt_id  bigint,
    run_at              timestamptz NOT NULL DEFAULT now(),
    deadline_at         timestamptz,
    cancel_requested_at timestamptz,
    cancel_requested_by text,
    cancel_reason       text,
    progress            jsonb,
    usage               jsonb NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    started_at          timestamptz,
    finished_at         timestamptz,
    CONSTRAINT job_lease_iff_live
        CHECK ((state IN ('running', 'cancelling')) = (current_attempt_id IS NOT NULL)),
    CONSTRAINT job_finished_iff_terminal
        CHECK ((state IN ('succeeded', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CONSTRAINT job_cancelling_has_request
        CHECK (state <> 'cancelling' OR cancel_requested_at IS NOT NULL)
);

CREATE INDEX job_claimable ON job (run_at, id) WHERE state = 'queued';
CREATE INDEX job_live ON job (id) WHERE state IN ('running', 'cancelling');
CREATE INDEX job_deadline ON job (deadline_at)
    WHERE deadline_at IS NOT NULL AND state IN ('queued', 'running');
CREATE INDEX job_requester_recent ON job (requester, created_at DESC);
CREATE INDEX job_state_recent ON job (state, created_at DESC);

CREATE TABLE attempt (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id           bigint NOT NULL REFERENCES job (id) ON DELETE CASCADE,
    number           integer NOT NULL CHECK (number >= 1),
    -- The worker incarnation (host, pid, random) that claimed it.
    worker           text NOT NULL,
    started_at       timestamptz NOT NULL DEFAULT now(),
    heartbeat_at     timestamptz NOT NULL DEFAULT now(),
    lease_expires_at timestamptz NOT NULL,
    ended_at         timestamptz,
    outcome          text CHECK (outcome IN (
        'succeeded', 'failed', 'retry', 'cancelled', 'unknown', 'abandoned', 'released', 'revoked'
    )),
    error            jsonb,
    UNIQUE (job_id, number),
    CONSTRAINT attempt_outcome_iff_ended CHECK ((ended_at IS NULL) = (outcome IS NULL))
);

-- At most one live attempt per job.
CREATE UNIQUE INDEX attempt_one_live ON attempt (job_id) WHERE ended_at IS NULL;
CREATE INDEX attempt_live_by_worker ON attempt (worker) WHERE ended_at IS NULL;
CREATE INDEX attempt_live_by_lease ON attempt (lease_expires_at) WHERE ended_at IS NULL;

CREATE TABLE event (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint NOT NULL REFERENCES job (id) ON DELETE CASCADE,
    from_state  job_state,          -- NULL for the submit that created the job
    to_state    job_state NOT NULL, -- for an ignored event: the target that was refused
    actor       job_actor NOT NULL,
    attempt_id  bigint,
    reason      text,
    at          timestamptz NOT NULL DEFAULT now(),
    data        jsonb,
    -- A stale or late write that changed nothing, kept as evidence.
    ignored     boolean NOT NULL DEFAULT false
);

CREATE INDEX event_by_job ON event (job_id, id);

CREATE TABLE effect (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES job (id) ON DELETE CASCADE,
    attempt_id   bigint NOT NULL,
    key          text NOT NULL,
    status       text NOT NULL CHECK (status IN ('intent', 'done', 'failed')),
    has_lookup   boolean NOT NULL DEFAULT false,
    outcome      jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz,
    UNIQUE (job_id, key)
);

CREATE TABLE outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES job (id) ON DELETE CASCADE,
    event_id     bigint,
    topic        text NOT NULL,
    payload      jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    available_at timestamptz NOT NULL DEFAULT now(),
    attempts     integer NOT NULL DEFAULT 0,
    delivered_at timestamptz,
    dead_at      timestamptz,
    last_error   text,
    -- What the transport created (e.g. a Discord message id), recorded on delivery.
    external_id  text
);

CREATE INDEX outbox_pending ON outbox (available_at, id)
    WHERE delivered_at IS NULL AND dead_at IS NULL;
CREATE INDEX outbox_by_job ON outbox (job_id, id);
