-- Runtime SQL of the job engine. Each query starts with "-- name: NAME" and a one-line
-- description; jobs/engine/queries.py loads them into a mapping and a test checks every name used exists.
-- Placeholders are asyncpg's $n.

-- name: job_insert
-- Create a job unless its idempotency key exists, with its creation event (a notice when it has
-- an origin).
WITH ins AS (
    INSERT INTO job (public_id, kind, params, requester, origin, origin_group, idempotency_key,
                     max_attempts, deadline_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
            CASE WHEN $9::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $9) END)
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING *
), ev AS (
    -- A job with an origin has a transport to tell: its events are notices, due now.
    INSERT INTO event (job_id, from_state, to_state, actor, reason, notice_at)
    SELECT id, NULL, 'queued', 'requester', 'submitted',
           CASE WHEN origin <> '{}'::jsonb THEN now() END
    FROM ins
)
SELECT ins.*, pg_notify('errand_job', ins.kind)::text AS _notified FROM ins;

-- name: job_insert_many
-- Create many jobs at once (unnest arrays; params and origin as JSON text), each with its
-- creation event (a notice when it has an origin), skipping rows whose idempotency key
-- exists; one NOTIFY per kind. Every column but the public id comes either as an array (a value
-- per row) or, when all rows share one value, as that value ($10-$17) with a NULL array: a batch
-- of one kind for one requester then sends, and the server parses, its kind, params and origin
-- once instead of once per row (jobs/engine/store.py, _bulk_arguments). Rows are inserted in
-- idempotency-key order, so concurrent batches that share keys wait for each other in one order
-- and never deadlock. A batch without keys runs it without the ORDER BY and ON CONFLICT lines
-- and returns only a count (jobs/engine/store.py).
WITH shared AS MATERIALIZED (
    SELECT $10::text AS kind, $11::text::jsonb AS params, $12::text AS requester,
           $13::text::jsonb AS origin, $14::text AS origin_group, $15::text AS idempotency_key,
           $16::int AS max_attempts, $17::float8 AS deadline_seconds
), input AS (
    SELECT t.public_id,
           coalesce(t.kind, s.kind) AS kind,
           coalesce(t.params::jsonb, s.params) AS params,
           coalesce(t.requester, s.requester) AS requester,
           coalesce(t.origin::jsonb, s.origin) AS origin,
           coalesce(t.origin_group, s.origin_group) AS origin_group,
           coalesce(t.idempotency_key, s.idempotency_key) AS idempotency_key,
           coalesce(t.max_attempts, s.max_attempts) AS max_attempts,
           coalesce(t.deadline_seconds, s.deadline_seconds) AS deadline_seconds
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                $6::text[], $7::text[], $8::int[], $9::float8[])
             AS t(public_id, kind, params, requester, origin, origin_group, idempotency_key,
                  max_attempts, deadline_seconds)
         CROSS JOIN shared s
), ins AS (
    INSERT INTO job (public_id, kind, params, requester, origin, origin_group, idempotency_key,
                     max_attempts, deadline_at)
    SELECT public_id, kind, params, requester, origin, origin_group,
           idempotency_key, max_attempts,
           CASE WHEN deadline_seconds IS NULL THEN NULL
                ELSE now() + make_interval(secs => deadline_seconds) END
    FROM input
    ORDER BY idempotency_key
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, public_id, kind, origin <> '{}'::jsonb AS transported
), ev AS (
    INSERT INTO event (job_id, from_state, to_state, actor, reason, notice_at)
    SELECT id, NULL, 'queued', 'requester', 'submitted', CASE WHEN transported THEN now() END
    FROM ins
)
SELECT ins.public_id,
       (SELECT count(pg_notify('errand_job', k)) FROM (SELECT DISTINCT kind FROM ins) d(k))
           AS _notified
FROM ins;

-- name: job_by_idempotency_keys
-- The jobs repeated bulk submits refer to.
SELECT * FROM job WHERE idempotency_key = ANY($1::text[]);

-- name: job_by_idempotency_key
-- The job a repeated submit refers to.
SELECT * FROM job WHERE idempotency_key = $1;

-- name: job_count_active_by_requester
-- Jobs of one requester in the given (not terminal) states (quota check).
SELECT count(*) FROM job
WHERE requester = $1 AND state = ANY($2::job_state[]);

-- name: job_count_active_by_group
-- Jobs of one origin group, e.g. a Discord guild, in the given states (quota check).
SELECT count(*) FROM job
WHERE origin_group = $1 AND state = ANY($2::job_state[]);

-- name: job_get
-- One job by public id.
SELECT * FROM job WHERE public_id = $1;

-- name: job_list
-- Recent jobs, newest first, with optional filters (NULL means any).
SELECT * FROM job
WHERE ($1::job_state[] IS NULL OR state = ANY($1))
  AND ($2::text IS NULL OR kind = $2)
  AND ($3::text IS NULL OR requester = $3)
  AND ($4::float8 IS NULL OR created_at >= now() - make_interval(secs => $4))
  AND ($5::text IS NULL OR origin_group = $5)
ORDER BY created_at DESC, id DESC
LIMIT $6;

-- name: event_list_by_job
-- A job's events, oldest first.
SELECT * FROM event WHERE job_id = $1 ORDER BY id;

-- name: attempt_list_by_job
-- A job's attempts, oldest first.
SELECT * FROM attempt WHERE job_id = $1 ORDER BY number;

-- name: job_claim
-- Claim up to $3 due jobs in one statement (an implicit transaction): lock them skipping rows
-- others hold, open an attempt on each, move them from the claimable states to running with the
-- attempt as fencing token, and write each one's event (a notice when it has an origin).
-- Returns what the runtime needs to start the handlers. {claimable} is the transition table's
-- sources of "running" for a worker, written in as a constant (jobs/engine/transition.py)
-- rather than passed as a parameter: with a parameter the planner cannot use the partial index
-- job_claimable in a generic plan, and each claim would sort every queued job.
WITH picked AS (
    SELECT id, state, attempts FROM job
    WHERE state = ANY({claimable}::job_state[]) AND run_at <= now()
      AND ($4::text[] IS NULL OR kind = ANY($4))
      -- Never start an attempt beyond the maximum: only failures use attempts up.
      AND failures < max_attempts
    ORDER BY run_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), moved AS (
    -- The attempt's id is drawn here, so the rows below are written straight from this one (no
    -- join between the statement's parts, which the planner, expecting a row or two, does as
    -- nested loops: 100 x 100 rescans per claim of 100).
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
    SELECT current_attempt_id, id, attempts, $1, now() + make_interval(secs => $2) FROM moved
), ev AS (
    INSERT INTO event (job_id, from_state, to_state, actor, attempt_id, reason, notice_at)
    SELECT id, from_state, 'running', 'worker', current_attempt_id, NULL,
           CASE WHEN origin <> '{}'::jsonb THEN now() END
    FROM moved
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
UPDATE job SET max_attempts = greatest(max_attempts, failures + 1) WHERE id = $1;

-- name: job_transition
-- Move jobs by a table of moves (from -> to), fenced by attempt when asked, with events,
-- the end of the previous attempt (events are notices for jobs with an origin) and wake-ups, all
-- in one statement.
-- $10 fence: 'attempt' = only the current attempt may write; 'claim' = the attempt in $2 takes
-- the lease; 'none' = no attempt involved. A move reason of '@keep' keeps the job's reason.
-- $17: the states in which an attempt holds the lease (LIVE), $18: the terminal states
-- (TERMINAL), both from jobs/engine/state.py.
-- $19: per move, whether it uses up one of the job's max_attempts (failures + 1). The steps an
-- ended attempt left open (a crash) are closed as 'interrupted'.
WITH input AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::jsonb[], $5::jsonb[],
                         $6::timestamptz[])
        AS t(job_id, attempt_id, reason, result, error, run_at)
    -- In id order: cur locks each job as it reads it, so every batch locks in one order and
    -- two batches that share jobs wait for each other instead of deadlocking.
    ORDER BY job_id
), moves AS (
    SELECT * FROM unnest($7::job_state[], $8::job_state[], $11::text[], $12::text[],
                         $19::boolean[])
        AS m(from_state, to_state, reason, outcome, charge)
), cur AS (
    -- Each job by primary key, locked as it is read, in input's (id) order. The OFFSET keeps
    -- the planner from turning this into a hash join over the whole table, its choice at a
    -- few thousand rows (it prices index reads as disk reads).
    SELECT j.id, j.state, j.current_attempt_id, j.reason AS old_reason,
           i.attempt_id, i.reason, i.result, i.error, i.run_at
    FROM input i
    CROSS JOIN LATERAL (SELECT * FROM job WHERE job.id = i.job_id OFFSET 0) j
    ORDER BY j.id
    FOR UPDATE OF j
), plan AS (
    SELECT c.*, m.to_state, m.outcome, m.charge,
           CASE WHEN m.reason = '@keep' THEN c.old_reason ELSE coalesce(m.reason, c.reason) END
               AS new_reason
    FROM cur c JOIN moves m ON m.from_state = c.state
    WHERE $10::text <> 'attempt' OR c.current_attempt_id = c.attempt_id
), moved AS (
    UPDATE job j SET
        state = p.to_state,
        reason = p.new_reason,
        result = coalesce(p.result, j.result),
        error = coalesce(p.error, j.error),
        run_at = coalesce(p.run_at, j.run_at),
        current_attempt_id = CASE
            WHEN p.to_state <> ALL($17::job_state[]) THEN NULL
            WHEN $10::text = 'claim' THEN p.attempt_id
            ELSE j.current_attempt_id END,
        attempts = j.attempts + (CASE WHEN $10::text = 'claim' THEN 1 ELSE 0 END),
        failures = j.failures + (CASE WHEN p.charge THEN 1 ELSE 0 END),
        started_at = CASE WHEN $10::text = 'claim' THEN coalesce(j.started_at, now())
                          ELSE j.started_at END,
        finished_at = CASE WHEN p.to_state = ANY($18::job_state[]) THEN now() END,
        cancel_requested_at = CASE WHEN $13::text IS NULL THEN j.cancel_requested_at
                                   ELSE coalesce(j.cancel_requested_at, now()) END,
        cancel_requested_by = coalesce(j.cancel_requested_by, $13::text),
        cancel_reason = coalesce(j.cancel_reason, $14::text),
        updated_at = now()
    FROM plan p
    WHERE j.id = p.id
    RETURNING j.*, p.state AS from_state, p.current_attempt_id AS prev_attempt_id,
              p.attempt_id AS writer_attempt_id, p.outcome AS attempt_outcome,
              p.error AS attempt_error
), ended AS (
    UPDATE attempt a SET ended_at = now(), outcome = m.attempt_outcome, error = m.attempt_error
    FROM moved m
    WHERE a.id = m.prev_attempt_id AND m.state <> ALL($17::job_state[])
), interrupted AS (
    UPDATE step s SET ended_at = now(), outcome = 'interrupted'
    FROM moved m
    WHERE s.job_id = m.id AND s.attempt_id = m.prev_attempt_id AND s.ended_at IS NULL
      AND m.state <> ALL($17::job_state[])
), ev AS (
    INSERT INTO event (job_id, from_state, to_state, actor, attempt_id, reason, data, notice_at)
    SELECT m.id, m.from_state, m.state, $9::job_actor,
           coalesce(m.writer_attempt_id, m.prev_attempt_id), m.reason, $15::jsonb,
           CASE WHEN m.origin <> '{}'::jsonb THEN now() END
    FROM moved m
), ignored AS (
    -- A write from an attempt that lost its lease, or after the job ended: kept as evidence,
    -- with the result or error it carried ("left behind"), and it changes nothing else.
    INSERT INTO event (job_id, from_state, to_state, actor, attempt_id, reason, data, ignored)
    SELECT c.id, c.state, $16::job_state, $9::job_actor, c.attempt_id, c.reason,
           jsonb_strip_nulls(jsonb_build_object(
               'current_attempt_id', c.current_attempt_id, 'left_behind_result', c.result,
               'error', c.error)),
           true
    FROM cur c
    WHERE $10::text = 'attempt' AND NOT EXISTS (SELECT 1 FROM plan p WHERE p.id = c.id)
)
-- (Not the params, origin or checkpoint: nobody reads them from a transition, and decoding
-- them cost a worker's batch of ends three JSON documents per job.)
SELECT c.id, c.state AS from_state, m.state AS to_state, m.public_id, m.kind,
       m.attempts, m.failures, m.max_attempts, m.deadline_at, m.current_attempt_id,
       m.reason,
       now() - m.run_at AS since_due,
       CASE
           WHEN m.id IS NULL THEN NULL
           WHEN m.state = 'cancelling' THEN
               pg_notify('errand_cancel', m.current_attempt_id::text)::text
           WHEN m.state = 'queued' THEN pg_notify('errand_job', m.kind)::text
       END AS _notified,
       CASE WHEN m.id IS NOT NULL AND m.origin <> '{}'::jsonb
            THEN pg_notify('errand_outbox', '')::text END AS _outbox_notified
FROM cur c LEFT JOIN moved m ON m.id = c.id;

-- name: job_cancel
-- A cancel request in one statement (an implicit transaction): lock the job by public id, move
-- it along the first of the moves ($2 -> $3, reasons $4, attempt outcomes $5) whose source is its
-- state, end the attempt when the move leaves the live states, record the request (who $7, why
-- $8, once), write the event (a notice when it has an origin), and NOTIFY the attempt to stop.
-- Returns the job as it now is, with from_state and whether it moved. $9: the states in which
-- an attempt holds the lease (LIVE), $10: the terminal states (TERMINAL), both from
-- jobs/engine/state.py.
WITH moves AS (
    SELECT * FROM unnest($2::job_state[], $3::job_state[], $4::text[], $5::text[])
        AS m(from_state, to_state, reason, outcome)
), cur AS (
    SELECT j.* FROM job j WHERE j.public_id = $1 FOR UPDATE
), plan AS (
    SELECT c.id, c.state, c.current_attempt_id, m.to_state, m.reason AS new_reason, m.outcome
    FROM cur c JOIN moves m ON m.from_state = c.state
), moved AS (
    UPDATE job j SET
        state = p.to_state,
        reason = p.new_reason,
        current_attempt_id = CASE WHEN p.to_state = ANY($9::job_state[])
                                  THEN j.current_attempt_id END,
        finished_at = CASE WHEN p.to_state = ANY($10::job_state[]) THEN now() END,
        cancel_requested_at = coalesce(j.cancel_requested_at, now()),
        cancel_requested_by = coalesce(j.cancel_requested_by, $7::text),
        cancel_reason = coalesce(j.cancel_reason, $8::text),
        updated_at = now()
    FROM plan p
    WHERE j.id = p.id
    RETURNING j.*, p.state AS from_state, p.current_attempt_id AS prev_attempt_id,
              p.outcome AS attempt_outcome
), ended AS (
    UPDATE attempt a SET ended_at = now(), outcome = m.attempt_outcome
    FROM moved m
    WHERE a.id = m.prev_attempt_id AND m.state <> ALL($9::job_state[])
), interrupted AS (
    -- A forced cancel ends the attempt: the steps it left open are closed, as job_transition does.
    UPDATE step s SET ended_at = now(), outcome = 'interrupted'
    FROM moved m
    WHERE s.job_id = m.id AND s.attempt_id = m.prev_attempt_id AND s.ended_at IS NULL
      AND m.state <> ALL($9::job_state[])
), ev AS (
    INSERT INTO event (job_id, from_state, to_state, actor, attempt_id, reason, notice_at)
    SELECT m.id, m.from_state, m.state, $6::job_actor, m.prev_attempt_id, m.reason,
           CASE WHEN m.origin <> '{}'::jsonb THEN now() END
    FROM moved m
)
SELECT m.*, true AS moved,
       CASE WHEN m.state = 'cancelling'
            THEN pg_notify('errand_cancel', m.current_attempt_id::text)::text END AS _notified,
       CASE WHEN m.origin <> '{}'::jsonb
            THEN pg_notify('errand_outbox', '')::text END AS _outbox_notified
FROM moved m
UNION ALL
SELECT c.*, c.state AS from_state, c.current_attempt_id AS prev_attempt_id,
       NULL::text AS attempt_outcome, false AS moved, NULL::text, NULL::text
FROM cur c
WHERE NOT EXISTS (SELECT 1 FROM moved);

-- name: job_lock_many
-- Lock jobs in id order, for a transaction that moves them with more than one statement.
SELECT id FROM job WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE;

-- name: attempt_heartbeat
-- Renew the live leases of one worker in one statement, only those of the attempts it still
-- holds ($3: running, or ended with the end not yet written), so an attempt it lost track of
-- expires; report which of them were asked to cancel or are no longer current.
-- It never waits for a row: a finish or the reaper locks jobs, then their attempts, in an order
-- of its own, so a heartbeat that waited for one attempt while holding another could close a
-- cycle (a deadlock). An attempt another statement is writing is skipped, without a verdict;
-- its lease is renewed by the next heartbeat if it is still live, or its end speaks for itself.
-- (NO KEY UPDATE, the UPDATE's own lock: a statement that only references the row is no cause.)
WITH live AS (
    SELECT a.id FROM attempt a
    WHERE a.worker = $1 AND a.ended_at IS NULL AND a.id = ANY($3::bigint[])
), held AS (
    -- ended_at again: a row ended since the statement's snapshot is read anew once locked.
    SELECT a.id FROM attempt a JOIN live l ON l.id = a.id
    WHERE a.ended_at IS NULL
    FOR NO KEY UPDATE OF a SKIP LOCKED
), renewed AS (
    UPDATE attempt a SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => $2)
    FROM held h, job j
    WHERE a.id = h.id AND j.id = a.job_id AND j.current_attempt_id = a.id
    RETURNING a.id, j.state
)
SELECT x.id AS attempt_id, coalesce(r.state::text, 'lost') AS state
FROM unnest($3::bigint[]) AS x(id) LEFT JOIN renewed r ON r.id = x.id
WHERE r.state = 'cancelling'
   OR (r.id IS NULL
       AND (x.id IN (SELECT id FROM held) OR x.id NOT IN (SELECT id FROM live)));

-- name: job_set_progress
-- Record progress from the attempt holding the lease; wakes transports watching the job.
-- Progress never goes backwards: a report below the recorded "done" (an attempt redoing work)
-- leaves the record as it is until it catches up.
UPDATE job SET progress = $3, updated_at = now()
WHERE id = $1 AND current_attempt_id = $2
  AND coalesce((progress->>'done')::float8, 0) <= coalesce(($3::jsonb->>'done')::float8, 0)
RETURNING public_id, pg_notify('errand_progress', public_id)::text AS _notified;

-- name: reaper_due
-- Whether the reaper has anything to do: the three selections below, read without locks ($1:
-- the cancel grace in seconds). Every worker reaps every second and almost always finds
-- nothing; this one statement, outside any transaction, is then the whole of it (the locked
-- selections cost a BEGIN, three statements and a COMMIT). What it misses for being unlocked,
-- the next round finds. {live} (the states in which an attempt holds the lease) and {deadline}
-- (the states a deadline moves) are written in as constants (jobs/engine/store.py), as
-- job_claim's {claimable}: with parameters, the prepared statement's generic plan cannot use
-- the partial indexes job_live and job_deadline and scans the job table (1.8 ms at 20,000 jobs,
-- against 0.1 ms).
SELECT EXISTS (SELECT 1 FROM job j JOIN attempt a ON a.id = j.current_attempt_id
               WHERE j.state = ANY({live}::job_state[]) AND a.lease_expires_at < now())
    OR EXISTS (SELECT 1 FROM job j
               WHERE j.state = 'cancelling'
                 AND j.cancel_requested_at < now() - make_interval(secs => $1))
    OR EXISTS (SELECT 1 FROM job j
               WHERE j.deadline_at < now() AND j.state = ANY({deadline}::job_state[]));

-- name: job_expired_leases
-- Live jobs ($2: the states in which an attempt holds the lease) whose lease expired, locked
-- so two reapers never act on one job.
SELECT j.id, j.public_id, j.kind, j.state, j.attempts, j.failures, j.max_attempts,
       j.cancel_reason, a.id AS attempt_id, j.checkpoint IS NOT NULL AS has_checkpoint,
       -- The database restarted after the last heartbeat: the lease ran out during an outage.
       pg_postmaster_start_time() > a.heartbeat_at AS database_restarted,
       EXISTS (SELECT 1 FROM effect e WHERE e.job_id = j.id AND e.status = 'intent'
                 AND NOT e.has_lookup) AS blind_effect_in_flight
FROM job j JOIN attempt a ON a.id = j.current_attempt_id
WHERE j.state = ANY($2::job_state[]) AND a.lease_expires_at < now()
ORDER BY j.id
LIMIT $1
FOR UPDATE OF j SKIP LOCKED;

-- name: job_cancel_overdue
-- Cancelling jobs whose attempt did not acknowledge within the grace period.
SELECT j.id, j.public_id, j.cancel_reason, j.current_attempt_id AS attempt_id
FROM job j
WHERE j.state = 'cancelling' AND j.cancel_requested_at < now() - make_interval(secs => $1)
ORDER BY j.id
LIMIT $2
FOR UPDATE SKIP LOCKED;

-- name: job_past_deadline
-- Jobs past their deadline in the states a deadline moves ($2: queued and running).
SELECT j.id, j.public_id, j.state
FROM job j
WHERE j.deadline_at < now() AND j.state = ANY($2::job_state[])
ORDER BY j.id
LIMIT $1
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
