-- The runtime record: steps (each with its own budget and usage) and assets (results and logs
-- that outlive the job). Effects already exist (0001); they get the error of a failed effect.

CREATE TABLE step (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint NOT NULL REFERENCES job (id) ON DELETE CASCADE,
    attempt_id  bigint NOT NULL,
    -- 1, 2, ... within the job, across attempts (the job's step budget counts them all).
    number      integer NOT NULL CHECK (number >= 1),
    name        text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz,
    -- {"tokens": .., "prompt_tokens": .., "completion_tokens": .., "tool_calls": .., "seconds": ..}
    usage       jsonb NOT NULL DEFAULT '{}',
    outcome     text CHECK (outcome IN ('ok', 'failed', 'budget_exceeded', 'cancelled')),
    error       text,
    UNIQUE (job_id, number),
    CONSTRAINT step_outcome_iff_ended CHECK ((ended_at IS NULL) = (outcome IS NULL))
);

CREATE INDEX step_by_job ON step (job_id, number);

CREATE TABLE asset (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES job (id) ON DELETE CASCADE,
    attempt_id   bigint NOT NULL,
    name         text NOT NULL CHECK (name ~ '^[A-Za-z0-9._-]{1,120}$'),
    content_type text NOT NULL DEFAULT 'application/octet-stream',
    size         bigint NOT NULL CHECK (size >= 0),
    -- Small assets live here; large ones in a file under the data directory (path).
    data         bytea,
    path         text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (job_id, name),
    CONSTRAINT asset_data_xor_path CHECK ((data IS NULL) <> (path IS NULL))
);

ALTER TABLE effect ADD COLUMN error text;
