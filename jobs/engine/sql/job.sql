-- The job: submit, read, claim, transition, progress, the reaper's selections, retention.
-- Each query starts with "-- name: NAME" and a line or two saying what it does; parameters are
-- :name, sets of states {set} (jobs/engine/queries.py).

-- name: job_insert
-- Create a job unless its idempotency key exists, with its creation event (a notice when it has
-- an origin); wakes a waiting worker (job_wake, migrations/0012_worker_waiting.sql).
WITH ins AS (
    INSERT INTO job (public_id, kind, params, requester, origin, origin_group, idempotency_key,
                     max_attempts, deadline_at)
    VALUES (:public_id, :kind, :params, :requester, :origin, :origin_group, :idempotency_key,
            :max_attempts,
            CASE WHEN :deadline_seconds::float8 IS NULL THEN NULL
                 ELSE now() + make_interval(secs => :deadline_seconds) END)
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING *
), ev AS (
    -- A job with an origin has a transport to tell: its events are notices, due now.
    INSERT INTO event (job_id, from_state, to_state, actor, reason, notice_at)
    SELECT id, NULL, 'queued', 'requester', 'submitted',
           CASE WHEN origin <> '{}'::jsonb THEN now() END
    FROM ins
)
SELECT ins.*, job_wake(ins.kind) AS _woke FROM ins;

-- name: job_insert_many
-- Create many jobs at once, each with its creation event (a notice when it has an origin); one
-- wake-up per kind (job_wake); returns how many. Each column but the public id comes as an array
-- (a value per row) or, when every row shares one value, as that value with a NULL array, so a
-- batch of one kind for one requester sends and parses its kind, params and origin once. No ON CONFLICT:
-- the caller leaves out rows whose idempotency key exists, and a key taken meanwhile fails the
-- statement (nothing written) and is retried; rows go in key order, so batches that share keys
-- wait for each other in one order instead of deadlocking.
WITH input AS (
    SELECT t.public_id,
           coalesce(t.kind, :kind) AS kind,
           coalesce(t.params::jsonb, :params::text::jsonb) AS params,
           coalesce(t.requester, :requester) AS requester,
           coalesce(t.origin::jsonb, :origin::text::jsonb) AS origin,
           coalesce(t.origin_group, :origin_group) AS origin_group,
           coalesce(t.idempotency_key, :idempotency_key) AS idempotency_key,
           coalesce(t.max_attempts, :max_attempts) AS max_attempts,
           coalesce(t.deadline_seconds, :deadline_seconds) AS deadline_seconds
    FROM unnest(:public_ids::text[], :kinds::text[], :params_each::text[],
                :requesters::text[], :origins::text[], :origin_groups::text[],
                :idempotency_keys::text[], :max_attempts_each::int[],
                :deadline_seconds_each::float8[])
             AS t(public_id, kind, params, requester, origin, origin_group, idempotency_key,
                  max_attempts, deadline_seconds)
), ins AS (
    INSERT INTO job (public_id, kind, params, requester, origin, origin_group, idempotency_key,
                     max_attempts, deadline_at)
    SELECT public_id, kind, params, requester, origin, origin_group,
           idempotency_key, max_attempts,
           CASE WHEN deadline_seconds IS NULL THEN NULL
                ELSE now() + make_interval(secs => deadline_seconds) END
    FROM input
    ORDER BY idempotency_key
    RETURNING id, kind, origin <> '{}'::jsonb AS transported
), ev AS (
    INSERT INTO event (job_id, from_state, to_state, actor, reason, notice_at)
    SELECT id, NULL, 'queued', 'requester', 'submitted', CASE WHEN transported THEN now() END
    FROM ins
)
SELECT count(*) AS created,
       (SELECT bool_or(job_wake(k)) FROM (SELECT DISTINCT kind FROM ins) d(k)) AS _woke
FROM ins;

-- name: job_by_idempotency_keys
-- The jobs repeated bulk submits refer to.
SELECT * FROM job WHERE idempotency_key = ANY(:keys::text[]);

-- name: job_by_idempotency_key
-- The job a repeated submit refers to.
SELECT * FROM job WHERE idempotency_key = :key;

-- name: job_count_active_by_requester
-- Jobs of one requester not yet terminal (quota check).
SELECT count(*) FROM job
WHERE requester = :requester AND state = ANY({active}::job_state[]);

-- name: job_count_active_by_group
-- Jobs of one origin group, e.g. a Discord guild, not yet terminal (quota check).
SELECT count(*) FROM job
WHERE origin_group = :origin_group AND state = ANY({active}::job_state[]);

-- name: job_get
-- One job by public id, with how long its attempts ran and when its worker was last heard from.
SELECT j.*, r.run_seconds, r.heartbeat_at
FROM job j CROSS JOIN LATERAL job_run_time(j.id, j.current_attempt_id) r
WHERE j.public_id = :public_id;

-- name: job_lock_by_public_id
-- Lock one job by public id before a request moves it: the move's own statement then starts
-- after the lock, so it sees whatever a concurrent claim committed meanwhile.
SELECT id FROM job WHERE public_id = :public_id FOR UPDATE;

-- name: job_id_by_public_id
-- One job's internal id.
SELECT id FROM job WHERE public_id = :public_id;

-- name: job_get_by_id
-- One job by internal id.
SELECT * FROM job WHERE id = :id;

-- name: job_list
-- Recent jobs, newest first, with optional filters (NULL means any).
SELECT * FROM job
WHERE (:states::job_state[] IS NULL OR state = ANY(:states))
  AND (:kind::text IS NULL OR kind = :kind)
  AND (:requester::text IS NULL OR requester = :requester)
  AND (:newer_than_seconds::float8 IS NULL
       OR created_at >= now() - make_interval(secs => :newer_than_seconds))
  AND (:origin_group::text IS NULL OR origin_group = :origin_group)
ORDER BY created_at DESC, id DESC
LIMIT :limit;

-- name: job_search_count
-- How many jobs the filters match, counted up to :cap (what a bulk action would touch).
SELECT count(*) FROM (
    SELECT 1 FROM job_matching(:states, :kind, :requester, :origin_group, :since, :until, :text)
    LIMIT :cap
) AS matched;

-- name: job_search_newest
-- One page of the operator's job list, newest first after a (created_at, id) cursor.
SELECT * FROM job_matching(:states, :kind, :requester, :origin_group, :since, :until, :text)
WHERE :after_at::timestamptz IS NULL OR (created_at, id) < (:after_at, :after_id::bigint)
ORDER BY created_at DESC, id DESC
LIMIT :limit;

-- name: job_search_oldest
-- The same page, oldest first.
SELECT * FROM job_matching(:states, :kind, :requester, :origin_group, :since, :until, :text)
WHERE :after_at::timestamptz IS NULL OR (created_at, id) > (:after_at, :after_id::bigint)
ORDER BY created_at, id
LIMIT :limit;

-- name: job_claim
-- Claim up to :limit due jobs in one statement (an implicit transaction): lock them skipping
-- rows others hold, open an attempt on each, move them to running with the attempt as fencing
-- token, and write each one's event (a notice when it has an origin). {claimable} is the
-- table's sources of "running" for a worker, a constant so that the generic plan can use the
-- partial index job_claimable (with a parameter each claim would sort every queued job).
-- The worker's row in worker_waiting (:waiting_pid, its LISTEN connection) goes when the claim
-- moves at least :unlist_at jobs: 0 after a wake-up (the worker is no longer waiting), its free
-- slots otherwise (it has none left).
WITH picked AS (
    SELECT id, state, attempts FROM job
    WHERE state = ANY({claimable}::job_state[]) AND run_at <= now()
      AND (:kinds::text[] IS NULL OR kind = ANY(:kinds))
      -- Never start an attempt beyond the maximum: only failures use attempts up.
      AND failures < max_attempts
    ORDER BY run_at, id
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
), moved AS (
    -- The attempt's id is drawn here, so the rows below are written straight from this one
    -- (joined back, the planner expecting a row or two does nested loops: 100 x 100 rescans).
    UPDATE job j SET
        state = 'running',
        reason = NULL,
        current_attempt_id = nextval('attempt_id_seq'),
        attempts = j.attempts + 1,
        started_at = coalesce(j.started_at, now()),
        updated_at = now()
    FROM picked p
    -- The id list makes the job rows reachable by primary key: joined on p.id alone, the
    -- planner (pricing index reads as disk reads) scans the whole table once it has statistics.
    WHERE j.id = p.id AND j.id = ANY(ARRAY(SELECT id FROM picked))
    RETURNING j.id, j.public_id, j.kind, j.params, j.attempts, j.failures, j.max_attempts,
              j.deadline_at, j.checkpoint, j.current_attempt_id, j.origin, j.run_at,
              p.state AS from_state
), att AS (
    INSERT INTO attempt (id, job_id, number, worker, lease_expires_at)
    OVERRIDING SYSTEM VALUE
    SELECT current_attempt_id, id, attempts, :worker,
           now() + make_interval(secs => :lease_seconds)
    FROM moved
), ev AS (
    INSERT INTO event (job_id, from_state, to_state, actor, attempt_id, reason, notice_at)
    SELECT id, from_state, 'running', 'worker', current_attempt_id, NULL,
           CASE WHEN origin <> '{}'::jsonb THEN now() END
    FROM moved
), unlisted AS (
    DELETE FROM worker_waiting
    WHERE pid = :waiting_pid AND (SELECT count(*) FROM moved) >= :unlist_at
)
SELECT m.id, m.public_id, m.kind, m.params, m.attempts, m.failures, m.max_attempts,
       m.deadline_at, m.checkpoint, m.current_attempt_id, m.from_state,
       now() - m.run_at AS since_due,
       (SELECT pg_notify('errand_outbox', '')
         WHERE EXISTS (SELECT 1 FROM moved x WHERE x.origin <> '{}'::jsonb))::text
           AS _outbox_notified
FROM moved m
ORDER BY m.id;

-- name: job_grant_attempt
-- One more attempt for a job a person resolved as a retry.
UPDATE job SET max_attempts = greatest(max_attempts, failures + 1) WHERE id = :id;

-- name: job_transition
-- Move jobs by a table of moves (from -> to) with, in the same statement, their events (notices
-- for jobs with an origin), the end of the previous attempt and the steps it left open
-- ('interrupted'), and wake-ups (a worker, for a job it may claim again; the attempt, for a job
-- now cancelling). :fence 'attempt': only the row's current attempt may write
-- (a refused write is kept as an ignored event); 'none': no attempt involved. A move reason of
-- '@keep' keeps the job's reason. :charges, per move: it uses up one of the job's max_attempts.
-- Every job row is locked before it is read. A row whose locked version names an attempt this
-- statement's snapshot cannot see (a claim committed while the statement waited for the row, or
-- after its snapshot) is raced: it does not move, since the end of that attempt would be
-- written against a snapshot without it; the caller moves it again in a new statement
-- (docs/state-machine.md, "A cancel racing a claim"). A fenced writer's raced row is simply
-- stale: its attempt is no longer the job's.
WITH input AS (
    SELECT * FROM unnest(:job_ids::bigint[], :attempt_ids::bigint[], :reasons::text[],
                         :results::jsonb[], :errors::jsonb[], :run_ats::timestamptz[])
        AS t(job_id, attempt_id, reason, result, error, run_at)
    -- In id order: cur locks each job as it reads it, so every batch locks in one order and
    -- two batches that share jobs wait for each other instead of deadlocking.
    ORDER BY job_id
), moves AS (
    SELECT * FROM unnest(:from_states::job_state[], :to_states::job_state[],
                         :move_reasons::text[], :outcomes::text[], :charges::boolean[])
        AS m(from_state, to_state, reason, outcome, charge)
), cur AS (
    -- Each job by primary key, locked as it is read, in input's (id) order. The OFFSET keeps
    -- the planner from turning this into a hash join over the whole table.
    SELECT j.id, j.state, j.current_attempt_id, j.reason AS old_reason,
           i.attempt_id, i.reason, i.result, i.error, i.run_at
    FROM input i
    CROSS JOIN LATERAL (SELECT * FROM job WHERE job.id = i.job_id OFFSET 0) j
    ORDER BY j.id
    FOR UPDATE OF j
), seen AS (
    SELECT c.*, (c.current_attempt_id IS NOT NULL AND NOT EXISTS (
                     SELECT 1 FROM attempt a WHERE a.id = c.current_attempt_id)) AS raced
    FROM cur c
), plan AS (
    SELECT c.*, m.to_state, m.outcome, m.charge,
           CASE WHEN m.reason = '@keep' THEN c.old_reason ELSE coalesce(m.reason, c.reason) END
               AS new_reason
    FROM seen c JOIN moves m ON m.from_state = c.state
    WHERE NOT c.raced AND (:fence::text <> 'attempt' OR c.current_attempt_id = c.attempt_id)
), moved AS (
    UPDATE job j SET
        state = p.to_state,
        reason = p.new_reason,
        result = coalesce(p.result, j.result),
        error = coalesce(p.error, j.error),
        run_at = coalesce(p.run_at, j.run_at),
        -- From the locked row (plan), never from this UPDATE's own read of j.
        current_attempt_id = CASE WHEN p.to_state = ANY({live}::job_state[])
                                  THEN p.current_attempt_id END,
        failures = j.failures + (CASE WHEN p.charge THEN 1 ELSE 0 END),
        finished_at = CASE WHEN p.to_state = ANY({terminal}::job_state[]) THEN now() END,
        cancel_requested_at = CASE WHEN :cancel_by::text IS NULL THEN j.cancel_requested_at
                                   ELSE coalesce(j.cancel_requested_at, now()) END,
        cancel_requested_by = coalesce(j.cancel_requested_by, :cancel_by::text),
        cancel_reason = coalesce(j.cancel_reason, :cancel_reason::text),
        updated_at = now()
    FROM plan p
    WHERE j.id = p.id
    RETURNING j.*, p.state AS from_state, p.current_attempt_id AS prev_attempt_id,
              p.attempt_id AS writer_attempt_id, p.outcome AS attempt_outcome,
              p.error AS attempt_error
), ended AS (
    UPDATE attempt a SET ended_at = now(), outcome = m.attempt_outcome, error = m.attempt_error
    FROM moved m
    WHERE a.id = m.prev_attempt_id AND m.state <> ALL({live}::job_state[])
), interrupted AS (
    UPDATE step s SET ended_at = now(), outcome = 'interrupted'
    FROM moved m
    WHERE s.job_id = m.id AND s.attempt_id = m.prev_attempt_id AND s.ended_at IS NULL
      AND m.state <> ALL({live}::job_state[])
), ev AS (
    INSERT INTO event (job_id, from_state, to_state, actor, attempt_id, reason, data, notice_at)
    SELECT m.id, m.from_state, m.state, :actor::job_actor,
           coalesce(m.writer_attempt_id, m.prev_attempt_id), m.reason, :data::jsonb,
           CASE WHEN m.origin <> '{}'::jsonb THEN now() END
    FROM moved m
), ignored AS (
    -- A write from an attempt that lost its lease, or after the job ended: kept as evidence,
    -- with the result or error it carried ("left behind"), and it changes nothing else.
    INSERT INTO event (job_id, from_state, to_state, actor, attempt_id, reason, data, ignored)
    SELECT c.id, c.state, :nominal::job_state, :actor::job_actor, c.attempt_id, c.reason,
           jsonb_strip_nulls(jsonb_build_object(
               'current_attempt_id', c.current_attempt_id, 'left_behind_result', c.result,
               'error', c.error)),
           true
    FROM seen c
    WHERE :fence::text = 'attempt' AND NOT EXISTS (SELECT 1 FROM plan p WHERE p.id = c.id)
)
-- (Not the params, origin or checkpoint: nobody reads them from a transition, and decoding
-- them would cost a worker's batch of ends three JSON documents per job.)
SELECT c.id, c.state AS from_state, m.state AS to_state, m.public_id, m.kind,
       -- A fenced writer a claim raced has lost its attempt: refused (and kept as ignored).
       c.raced AND :fence::text <> 'attempt' AS raced,
       now() - m.run_at AS since_due,
       CASE
           WHEN m.id IS NULL THEN NULL
           WHEN m.state = 'cancelling' THEN
               pg_notify('errand_cancel', m.current_attempt_id::text)::text
           WHEN m.state = ANY({claimable}::job_state[]) THEN job_wake(m.kind)::text
       END AS _notified,
       CASE WHEN m.id IS NOT NULL AND m.origin <> '{}'::jsonb
            THEN pg_notify('errand_outbox', '')::text END AS _outbox_notified
FROM seen c LEFT JOIN moved m ON m.id = c.id;

-- name: job_lock_many
-- Lock jobs in id order, for a transaction that moves them with more than one statement.
SELECT id FROM job WHERE id = ANY(:ids::bigint[]) ORDER BY id FOR UPDATE;

-- name: job_set_progress
-- Record progress from the attempt holding the lease; wakes transports watching the job.
-- Progress never goes backwards: a report below the recorded "done" (an attempt redoing work)
-- leaves the record as it is until it catches up.
UPDATE job SET progress = :progress, updated_at = now()
WHERE id = :job_id AND current_attempt_id = :attempt_id
  AND coalesce((progress->>'done')::float8, 0) <= coalesce((:progress::jsonb->>'done')::float8, 0)
RETURNING public_id, pg_notify('errand_progress', public_id)::text AS _notified;

-- name: job_usage_get
-- A job's usage so far (all attempts) and its step count, read when an attempt starts metering.
-- An interrupted step (cut short, nothing kept) runs again, so it is not counted.
SELECT j.usage,
       (SELECT count(*) FROM step s
        WHERE s.job_id = j.id AND s.outcome IS DISTINCT FROM 'interrupted') AS steps
FROM job j WHERE j.id = :job_id;

-- name: job_save_checkpoint
-- Save the handler's state (and the job's usage so far, so the two always agree) from the
-- attempt holding the lease; no row when it lost the lease.
UPDATE job SET checkpoint = :state, checkpoint_attempt_id = :attempt_id, checkpoint_at = now(),
               usage = coalesce(:usage, usage), updated_at = now()
WHERE id = :job_id AND current_attempt_id = :attempt_id
RETURNING id;

-- name: job_set_usage
-- Record a job's usage from the attempt holding the lease.
UPDATE job SET usage = :usage, updated_at = now()
WHERE id = :job_id AND current_attempt_id = :attempt_id
RETURNING id;

-- name: job_lock_for_attempt
-- Lock a job against state changes while the attempt holding its lease writes an effect.
SELECT id FROM job WHERE id = :job_id AND current_attempt_id = :attempt_id FOR SHARE;

-- name: reaper_due
-- Whether the reaper has anything to do: the three selections below, read without locks, and
-- the database's clock (the reaper's watch, jobs/engine/store/reaper.py). Every worker reaps
-- every second and almost always finds nothing; this one statement, outside any transaction, is
-- then the whole of it. What it misses for being unlocked, the next round finds. {live} and
-- {deadline} are constants, as in job_claim, so that its generic plan can use the partial
-- indexes job_live and job_deadline. A lease runs out as in job_expired_leases, from the
-- reaper's last word on when the database came back (:grace_from, NULL: it never went away).
SELECT now() AS at,
       EXISTS (SELECT 1 FROM job j JOIN attempt a ON a.id = j.current_attempt_id
               WHERE j.state = ANY({live}::job_state[]) AND a.lease_expires_at < now()
                 AND greatest(pg_postmaster_start_time(), :grace_from::timestamptz)
                     + (a.lease_expires_at - a.heartbeat_at) < now())
    OR EXISTS (SELECT 1 FROM job j
               WHERE j.state = 'cancelling'
                 AND j.cancel_requested_at < now() - make_interval(secs => :grace_seconds))
    OR EXISTS (SELECT 1 FROM job j
               WHERE j.deadline_at < now() AND j.state = ANY({deadline}::job_state[]))
       AS due;

-- name: job_expired_leases
-- Live jobs whose lease ran out, each locked with its attempt, so two reapers never act on one
-- job and a heartbeat renewing the lease (which locks the attempt) is never overtaken: one skips
-- the other, and a lease renewed before the lock is read anew and no longer counts.
-- An outage does not count against a lease (docs/state-machine.md, "An outage longer than the
-- lease"): once the database is back, every attempt has one lease more to heartbeat, from the
-- latest of the server's start (a restart), the end of the last gap the reaper itself saw
-- (:grace_from) and, when this statement came more than :blind_after seconds after the
-- round's first one (at :seen_at), now. An attempt last heard of before an outage (the
-- server's start, or :outage_end, the end of a gap the reaper saw) lost its lease to it.
WITH back AS (
    SELECT greatest(pg_postmaster_start_time(), :grace_from::timestamptz, late.now) AS grace_from,
           greatest(pg_postmaster_start_time(), :outage_end::timestamptz, late.now) AS outage_end
    FROM (SELECT CASE WHEN now() - :seen_at::timestamptz > make_interval(secs => :blind_after)
                      THEN now() END) AS late(now)
)
SELECT j.id, j.public_id, j.kind, j.state, j.attempts, j.failures, j.max_attempts,
       j.cancel_reason, a.id AS attempt_id, j.checkpoint IS NOT NULL AS has_checkpoint,
       a.heartbeat_at < b.outage_end AS outage,
       EXISTS (SELECT 1 FROM effect e WHERE e.job_id = j.id AND e.status = 'intent'
                 AND NOT e.has_lookup) AS blind_effect_in_flight
FROM job j JOIN attempt a ON a.id = j.current_attempt_id CROSS JOIN back b
WHERE j.state = ANY({live}::job_state[]) AND a.lease_expires_at < now()
  AND b.grace_from + (a.lease_expires_at - a.heartbeat_at) < now()
ORDER BY j.id
LIMIT :limit
FOR UPDATE OF j, a SKIP LOCKED;

-- name: job_cancel_overdue
-- Cancelling jobs whose attempt did not acknowledge within the grace period.
SELECT j.id, j.public_id, j.cancel_reason, j.current_attempt_id AS attempt_id
FROM job j
WHERE j.state = 'cancelling'
  AND j.cancel_requested_at < now() - make_interval(secs => :grace_seconds)
ORDER BY j.id
LIMIT :limit
FOR UPDATE SKIP LOCKED;

-- name: job_past_deadline
-- Jobs past their deadline in the states a deadline moves.
SELECT j.id, j.public_id, j.state
FROM job j
WHERE j.deadline_at < now() AND j.state = ANY({deadline}::job_state[])
ORDER BY j.id
LIMIT :limit
FOR UPDATE SKIP LOCKED;

-- name: job_statistics_stale
-- Whether the planner's statistics of the job table miss much of what changed since the last
-- ANALYZE (never analyzed, or more rows changed than a tenth of it and at least 1,000): a burst
-- of submits the statistics do not know of makes the claim sort the whole backlog.
SELECT c.reltuples < 0 OR s.n_mod_since_analyze > greatest(1000, c.reltuples / 10)
FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.oid = 'job'::regclass;

-- name: job_analyze_lock
-- One ANALYZE of the job table at a time across workers (held until the transaction ends).
SELECT pg_try_advisory_xact_lock(hashtextextended('errand:analyze job', 0));

-- name: job_count_by_state_kind
-- Jobs by state and kind, for the errand_jobs gauge.
SELECT state::text AS state, kind, count(*)::bigint AS count FROM job GROUP BY state, kind;

-- name: job_queue_lag
-- Seconds the oldest due job a worker may claim has waited (0 when none waits).
SELECT coalesce(extract(epoch FROM now() - min(run_at)), 0)::float8
FROM job WHERE state = ANY({claimable}::job_state[]) AND run_at <= now();

-- name: job_prunable
-- Terminal jobs finished more than :older_than_seconds ago with no pending notice (and, unless
-- :with_dead_notices, no dead-lettered one), oldest first, with their on-disk asset paths.
SELECT j.id, j.public_id,
       coalesce(array_agg(a.path) FILTER (WHERE a.path IS NOT NULL), '{}') AS paths
FROM job j LEFT JOIN asset a ON a.job_id = j.id
WHERE j.state = ANY({terminal}::job_state[])
  AND j.finished_at < now() - make_interval(secs => :older_than_seconds)
  AND NOT EXISTS (
      SELECT 1 FROM event e
      WHERE e.job_id = j.id AND e.notice_at IS NOT NULL AND e.delivered_at IS NULL
        AND (e.dead_at IS NULL OR NOT :with_dead_notices::boolean))
GROUP BY j.id
ORDER BY j.id
LIMIT :limit;

-- name: job_delete_many
-- Delete terminal jobs by id, with their attempts and events, notices included (which carry no
-- foreign key, see migrations/0008_lean_writes.sql); effects, steps, assets and bindings go by
-- cascade.
WITH gone AS (
    DELETE FROM job WHERE id = ANY(:ids::bigint[]) AND state = ANY({terminal}::job_state[])
    RETURNING id
), attempts AS (
    DELETE FROM attempt WHERE job_id IN (SELECT id FROM gone)
), events AS (
    DELETE FROM event WHERE job_id IN (SELECT id FROM gone)
)
SELECT id FROM gone;

-- name: job_silent
-- Live jobs of one transport (with :partitions > 0, only those whose partition modulo it is
-- one of :mine) whose current attempt's worker was last heard from more than :seconds ago,
-- longest silent first: a transport says so (a worker killed, a host lost) in the time the
-- reaper waits for the lease to end. Reads the partial index job_live.
SELECT j.id AS job_id, j.public_id, a.heartbeat_at
FROM job j JOIN attempt a ON a.id = j.current_attempt_id
WHERE j.state = ANY({live}::job_state[]) AND j.transport = :transport
  AND (:partitions = 0 OR mod(j.partition, :partitions) = ANY(:mine::bigint[]))
  AND a.heartbeat_at < now() - make_interval(secs => :seconds)
ORDER BY a.heartbeat_at
LIMIT :limit;
