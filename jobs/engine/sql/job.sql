-- The job: submit, read, claim, transition, progress, the reaper's selections, retention.
-- Each query starts with "-- name: NAME" and a line or two saying what it does; parameters are
-- :name, sets of states {set} (jobs/engine/queries.py).

-- name: job_insert
-- Create a job unless its idempotency key exists, with its creation event (a notice when it has
-- an origin); wakes a waiting worker (job_wake, migrations/0012_worker_waiting.sql). Every
-- statement that creates a job writes transport and partition from its origin (migration 0025).
-- A job given a run_at is due then (a delayed job), else now; its deadline counts from submit.
WITH ins AS (
    INSERT INTO job (public_id, kind, params, requester, origin, transport, partition,
                     origin_group, idempotency_key, max_attempts, deadline_at, priority, run_at,
                     traceparent)
    VALUES (:public_id, :kind, :params, :requester, :origin,
            origin_transport(:origin::jsonb), origin_partition(:origin::jsonb),
            :origin_group, :idempotency_key, :max_attempts,
            CASE WHEN :deadline_seconds::float8 IS NULL THEN NULL
                 ELSE now() + make_interval(secs => :deadline_seconds) END,
            :priority, coalesce(:run_at::timestamptz, now()), :traceparent)
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
           coalesce(t.deadline_seconds, :deadline_seconds) AS deadline_seconds,
           coalesce(t.priority, :priority) AS priority,
           coalesce(t.run_at, :run_at, now()) AS run_at,
           coalesce(t.traceparent, :traceparent) AS traceparent
    FROM unnest(:public_ids::text[], :kinds::text[], :params_each::text[],
                :requesters::text[], :origins::text[], :origin_groups::text[],
                :idempotency_keys::text[], :max_attempts_each::int[],
                :deadline_seconds_each::float8[], :priorities::smallint[],
                :run_ats::timestamptz[], :traceparents::text[])
             AS t(public_id, kind, params, requester, origin, origin_group, idempotency_key,
                  max_attempts, deadline_seconds, priority, run_at, traceparent)
), ins AS (
    INSERT INTO job (public_id, kind, params, requester, origin, transport, partition,
                     origin_group, idempotency_key, max_attempts, deadline_at, priority, run_at,
                     traceparent)
    SELECT public_id, kind, params, requester, origin, origin_transport(origin),
           origin_partition(origin), origin_group, idempotency_key, max_attempts,
           CASE WHEN deadline_seconds IS NULL THEN NULL
                ELSE now() + make_interval(secs => deadline_seconds) END,
           priority, run_at, traceparent
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

-- name: job_retry
-- An operator's retry: a new job for each job of :ids in state :retryable (locked first, in id
-- order), a copy of its request (kind, params, requester, origin, priority, attempts allowed,
-- deadline from now) linked to it (retry_of), with its creation event naming the operator (:by)
-- as its actor and evidence. A job already retried (its key 'retry:' || public id taken) gets
-- no second one. Wakes a waiting worker (job_wake); returns each new job with its old job's id.
WITH old AS (
    SELECT j.id, j.public_id, j.kind, j.params, j.requester, j.origin, j.origin_group,
           j.max_attempts, j.priority, j.deadline_at - j.created_at AS deadline
    FROM job j WHERE j.id = ANY(:ids::bigint[]) AND j.state = :retryable::job_state
    ORDER BY j.id
    FOR UPDATE
), fresh AS (
    SELECT o.*, row_number() OVER (ORDER BY o.id) AS n FROM old o
), ins AS (
    INSERT INTO job (public_id, kind, params, requester, origin, transport, partition,
                     origin_group, idempotency_key, max_attempts, deadline_at, priority, retry_of)
    SELECT (:public_ids::text[])[f.n], f.kind, f.params, f.requester, f.origin,
           origin_transport(f.origin), origin_partition(f.origin), f.origin_group,
           'retry:' || f.public_id, f.max_attempts, now() + f.deadline, f.priority, f.id
    FROM fresh f
    ORDER BY 'retry:' || f.public_id
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING *
), ev AS (
    INSERT INTO event (job_id, from_state, to_state, actor, reason, data, notice_at)
    SELECT i.id, NULL, 'queued', 'operator', 'retry of ' || o.public_id,
           jsonb_build_object('by', :by::text, 'retry_of', o.public_id),
           CASE WHEN i.origin <> '{}'::jsonb THEN now() END
    FROM ins i JOIN old o ON o.id = i.retry_of
)
SELECT ins.*, (SELECT bool_or(job_wake(k)) FROM (SELECT DISTINCT kind FROM ins) d(k)) AS _woke
FROM ins;

-- name: job_retries_of
-- The jobs that retry :id (an operator's retries), oldest first.
SELECT * FROM job WHERE retry_of = :id ORDER BY id;

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
ORDER BY id DESC  -- creation order; each filter's index is in id order (migration 0021)
LIMIT :limit;

-- name: job_search_count
-- How many jobs the filters match, counted up to :cap (what a bulk action would touch).
SELECT count(*) FROM (
    SELECT 1 FROM job_listing(:states, :kind, :requester, :origin_group, :since, :until, :margin)
    LIMIT :cap
) AS matched;

-- name: job_search_text_count
-- How many of the :scope newest jobs the filters match hold :text, counted up to :cap.
SELECT count(*) FROM (
    SELECT 1 FROM (
        SELECT j.origin, j.params
        FROM job_listing(:states, :kind, :requester, :origin_group, :since, :until, :margin) j
        ORDER BY j.id DESC
        LIMIT :scope
    ) s
    WHERE job_search_text(s.origin, s.params) ILIKE '%' || :text || '%'
    LIMIT :cap
) AS matched;

-- name: job_search_newest
-- One page of the operator's job list, newest first (by id, which grows with creation) after
-- the cursor :after (an id): each filter's index (migration 0021) is in id order, so a page
-- reads about :limit entries of it.
SELECT * FROM job_listing(:states, :kind, :requester, :origin_group, :since, :until, :margin)
WHERE :after::bigint IS NULL OR id < :after
ORDER BY id DESC
LIMIT :limit;

-- name: job_search_oldest
-- The same page, oldest first.
SELECT * FROM job_listing(:states, :kind, :requester, :origin_group, :since, :until, :margin)
WHERE :after::bigint IS NULL OR id > :after
ORDER BY id
LIMIT :limit;

-- name: job_search_text_newest
-- A page of the jobs whose task or parameters hold :text, searched within the :scope newest jobs
-- the other filters match after the cursor (no index: docs/performance-dashboard.md), reading
-- only until a page is found. Each row says whether it is a hit and how many jobs were read up
-- to it; the :scope-th job read comes too, hit or not, so the caller knows where the next
-- search starts.
SELECT * FROM (
    SELECT j.*, job_search_text(j.origin, j.params) ILIKE '%' || :text || '%' AS hit,
           row_number() OVER (ORDER BY j.id DESC) AS searched
    FROM job_listing(:states, :kind, :requester, :origin_group, :since, :until, :margin) j
    WHERE :after::bigint IS NULL OR j.id < :after
    ORDER BY j.id DESC
    LIMIT :scope
) AS s
WHERE s.hit OR s.searched = :scope
ORDER BY s.id DESC
LIMIT :limit;

-- name: job_search_text_oldest
-- The same search, oldest first.
SELECT * FROM (
    SELECT j.*, job_search_text(j.origin, j.params) ILIKE '%' || :text || '%' AS hit,
           row_number() OVER (ORDER BY j.id) AS searched
    FROM job_listing(:states, :kind, :requester, :origin_group, :since, :until, :margin) j
    WHERE :after::bigint IS NULL OR j.id > :after
    ORDER BY j.id
    LIMIT :scope
) AS s
WHERE s.hit OR s.searched = :scope
ORDER BY s.id
LIMIT :limit;

-- fragment: claim_lanes
-- Every (kind, group, requester, priority) with a queued job, one index probe each (a loose
-- index scan over job_lane): the lanes of job_claim and job_claim_lone.
    (SELECT kind, coalesce(origin_group, '') AS grp, requester, priority FROM job
     WHERE state = ANY({claimable}::job_state[])
     ORDER BY kind, coalesce(origin_group, ''), requester, priority
     LIMIT 1)
    UNION ALL
    SELECT n.* FROM lanes l CROSS JOIN LATERAL (
        SELECT kind, coalesce(origin_group, '') AS grp, requester, priority FROM job
        WHERE state = ANY({claimable}::job_state[])
          AND (kind, coalesce(origin_group, ''), requester, priority)
              > (l.kind, l.grp, l.requester, l.priority)
        ORDER BY kind, coalesce(origin_group, ''), requester, priority
        LIMIT 1
    ) n

-- fragment: claim_writes
-- The claim's writes, from the jobs "picked" (id, state) names: each moves to running under a
-- new attempt (its fencing token), its attempt row, its event (a notice when it has an origin).
-- Shared by job_claim and job_claim_lone, so both write a claim the same way.
moved AS (
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
    -- Joined on p.id alone: the planner, expecting few rows from picked (its filters above),
    -- reads each by primary key. An "id = ANY(picked's ids)" here was taken as the inner
    -- index condition instead, which read the whole list once per row (100 x 100).
    WHERE j.id = p.id
    RETURNING j.id, j.public_id, j.kind, j.params, j.attempts, j.failures, j.max_attempts,
              j.deadline_at, j.checkpoint, j.current_attempt_id, j.origin, j.run_at,
              j.traceparent, p.state AS from_state
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

-- fragment: claim_columns
-- What a claim returns for each moved job (jobs/engine/views.py, Claim), and the NOTIFY that
-- tells transports a notice is due.
       m.id, m.public_id, m.kind, m.params, m.attempts, m.failures, m.max_attempts,
       m.deadline_at, m.checkpoint, m.current_attempt_id, m.from_state, m.traceparent,
       now() - m.run_at AS since_due,
       (SELECT pg_notify('errand_outbox', '')
         WHERE EXISTS (SELECT 1 FROM moved x WHERE x.origin <> '{}'::jsonb))::text
           AS _outbox_notified

-- name: job_claim
-- Claim up to :limit due jobs in one statement (an implicit transaction), in the claim's order
-- (docs/state-machine.md, "The claim's order"): higher priority first; among equals, fair
-- share: the group, then the requester, with the fewest jobs running (counting those this claim
-- takes) goes first; then due order. Kinds that are paused are skipped; a kind's concurrency
-- cap, its starts per minute and :per_requester cap what is taken. Then, as ever: lock the jobs
-- skipping rows others hold, open an attempt on each, move them to running with the attempt as
-- fencing token, and write each one's event (a notice when it has an origin).
-- Queued jobs are read lane by lane (job_lane: kind, group, requester, priority), one probe per
-- lane and at most :limit jobs from each, so a backlog costs a claim nothing more.
-- A claim that a limit applies to locks claim_gate: such claims commit one after another, and
-- the jobs claims committed after this statement's snapshot (invisible to its counts) are
-- counted against every limit as "late" (the gate's starts as locked minus as seen).
-- {claimable} and {live} are constants, so the generic plan can use the partial indexes.
-- The worker's row in worker_waiting (:waiting_pid, its LISTEN connection) goes when the claim
-- moves at least :unlist_at jobs: 0 after a wake-up (the worker is no longer waiting), its free
-- slots otherwise (it has none left).
WITH RECURSIVE wanted AS (
    -- The kinds this worker runs (NULL: any) and the caps they declare.
    SELECT * FROM unnest(:kinds::text[], :declared_caps::int[], :declared_rates::int[])
        AS w(kind, cap, rate)
), rules AS (
    -- Each kind's rules as they stand: the operator's (kind_setting) over the kind's own.
    SELECT coalesce(w.kind, s.kind) AS kind,
           coalesce(s.concurrency, w.cap) AS cap,
           coalesce(s.starts_per_minute, w.rate) AS rate,
           s.paused_at IS NOT NULL AS paused
    FROM wanted w FULL JOIN kind_setting s ON s.kind = w.kind
    WHERE :kinds::text[] IS NULL OR w.kind IS NOT NULL
), gated AS (
    -- A limit applies: wait for the turn (the row as last committed, locked to the end).
    SELECT g.starts FROM claim_gate g
    WHERE :per_requester::int IS NOT NULL
       OR EXISTS (SELECT 1 FROM rules r
                  WHERE NOT r.paused AND (r.cap IS NOT NULL OR r.rate IS NOT NULL))
    FOR UPDATE
), late AS (
    SELECT coalesce((SELECT starts FROM gated) - (SELECT starts FROM claim_gate), 0) AS n
), live AS MATERIALIZED (
    -- The jobs running now, counted by who holds them and by kind.
    SELECT kind, requester,
           CASE WHEN :by_group::boolean THEN coalesce(origin_group, '') ELSE '' END AS grp
    FROM job WHERE state = ANY({live}::job_state[])
), held AS (
    SELECT grp, requester, kind, count(*) AS n FROM live GROUP BY grp, requester, kind
), lanes AS (
    -- Every (kind, group, requester, priority) with a queued job, one index probe each.
{claim_lanes}
), allowed_lanes AS (
    -- The lanes this worker may take from now ("late" joined: this claim has its turn, when
    -- gated, before it locks any job below).
    SELECT l.*, CASE WHEN :by_group::boolean THEN l.grp ELSE '' END AS fgrp, late.n AS late,
           r.cap
    FROM lanes l CROSS JOIN late LEFT JOIN rules r ON r.kind = l.kind
    WHERE (:kinds::text[] IS NULL OR r.kind IS NOT NULL) AND NOT coalesce(r.paused, false)
), open AS (
    -- How many jobs each lane may give this claim: its even share of its group's even share,
    -- and as many more as its group and its requester have fewer running than the busiest (an
    -- upper bound of what fair share takes from it; a lane cut short is read again next claim);
    -- never more than its kind's cap and its requester's cap leave (a capped lane is not read).
    SELECT l.*,
           least(
               ceil(:limit::int / (l.groups * l.mates)::float8)::int
               + (max(l.grunning) OVER () - l.grunning)::int
               + (max(l.running) OVER () - l.running)::int,
               greatest(0, coalesce(l.cap - l.krunning - l.late, :limit::int)),
               greatest(0, coalesce(:per_requester::int - l.own - l.late, :limit::int))
           ) AS share
    FROM (
        SELECT a.*, coalesce(h.n, 0) AS running, coalesce(g.n, 0) AS grunning,
               coalesce(o.n, 0) AS own, coalesce(k.n, 0) AS krunning,
               count(*) OVER (PARTITION BY a.fgrp) AS mates,
               (SELECT count(DISTINCT fgrp) FROM allowed_lanes) AS groups
        FROM allowed_lanes a
        LEFT JOIN (SELECT grp, requester, sum(n) AS n FROM held GROUP BY grp, requester) h
            ON h.grp = a.fgrp AND h.requester = a.requester
        LEFT JOIN (SELECT grp, sum(n) AS n FROM held GROUP BY grp) g ON g.grp = a.fgrp
        LEFT JOIN (SELECT requester, sum(n) AS n FROM held GROUP BY requester) o
            ON o.requester = a.requester
        LEFT JOIN (SELECT kind, sum(n) AS n FROM held GROUP BY kind) k ON k.kind = a.kind
    ) l
), due AS (
    -- The first due jobs of each open lane.
    SELECT c.id, c.run_at, c.state, l.kind, l.requester, l.priority, l.fgrp AS grp
    FROM open l CROSS JOIN LATERAL (
        SELECT j.id, j.run_at, j.state FROM job j
        WHERE j.state = ANY({claimable}::job_state[]) AND j.kind = l.kind
          AND coalesce(j.origin_group, '') = l.grp AND j.requester = l.requester
          AND j.priority = l.priority AND j.run_at <= now()
          -- Never start an attempt beyond the maximum: only failures use attempts up.
          AND j.failures < j.max_attempts
        ORDER BY j.run_at, j.id
        LIMIT least(:limit::int, l.share)
        -- Locked as read, skipping rows other claims hold, as the plain FIFO claim did: two
        -- claims at once take different jobs. What this claim reads but does not take is held
        -- only until it commits.
        FOR UPDATE OF j SKIP LOCKED
    ) c
), by_person AS (
    -- Each job's place among its requester's (fair share), after their running jobs; and
    -- among all of the person's jobs, for :per_requester.
    SELECT d.*,
           coalesce(h.n, 0) + row_number() OVER (PARTITION BY d.grp, d.requester
                                                 ORDER BY d.priority DESC, d.run_at, d.id) AS vr,
           coalesce(a.n, 0) + row_number() OVER (PARTITION BY d.requester
                                                 ORDER BY d.priority DESC, d.run_at, d.id) AS own
    FROM due d
    LEFT JOIN (SELECT grp, requester, sum(n) AS n FROM held GROUP BY grp, requester) h
        ON h.grp = d.grp AND h.requester = d.requester
    LEFT JOIN (SELECT requester, sum(n) AS n FROM held GROUP BY requester) a
        ON a.requester = d.requester
), by_group AS (
    -- ... and its group's place among the groups (fair share one level up).
    SELECT p.*,
           coalesce(h.n, 0) + row_number() OVER (PARTITION BY p.grp
                                                 ORDER BY p.priority DESC, p.vr, p.run_at, p.id)
               AS vg
    FROM by_person p CROSS JOIN late
    LEFT JOIN (SELECT grp, sum(n) AS n FROM held GROUP BY grp) h ON h.grp = p.grp
    WHERE :per_requester::int IS NULL OR p.own + late.n <= :per_requester
), by_kind AS (
    SELECT g.*, row_number() OVER (PARTITION BY g.kind
                                   ORDER BY g.priority DESC, g.vg, g.vr, g.run_at, g.id) AS kn
    FROM by_group g
), allowed AS (
    -- What each kind's caps let start now.
    SELECT k.* FROM by_kind k CROSS JOIN late LEFT JOIN rules r ON r.kind = k.kind
    WHERE (r.cap IS NULL
           OR k.kn + late.n + (SELECT coalesce(sum(n), 0) FROM held h WHERE h.kind = k.kind)
              <= r.cap)
      AND (r.rate IS NULL
           OR k.kn + late.n + (SELECT count(*) FROM kind_start s
                               WHERE s.kind = k.kind AND s.at > now() - interval '1 minute')
              <= r.rate)
), picked AS (
    SELECT a.id, a.state FROM allowed a
    ORDER BY a.priority DESC, a.vg, a.vr, a.run_at, a.id
    LIMIT :limit::int
),
{claim_writes}
), turn AS (
    -- The turn's count goes up by what this claim took (the row is this claim's, locked above).
    UPDATE claim_gate SET starts = starts + (SELECT count(*) FROM moved)
    WHERE EXISTS (SELECT 1 FROM gated) AND EXISTS (SELECT 1 FROM moved)
), started AS (
    INSERT INTO kind_start (kind)
    SELECT m.kind FROM moved m JOIN rules r ON r.kind = m.kind WHERE r.rate IS NOT NULL
), forgotten AS (
    DELETE FROM kind_start s USING rules r
    WHERE r.rate IS NOT NULL AND s.kind = r.kind AND s.at < now() - interval '1 minute'
), unlisted AS (
    DELETE FROM worker_waiting
    WHERE pid = :waiting_pid AND (SELECT count(*) FROM moved) >= :unlist_at
)
SELECT
{claim_columns}
FROM moved m
ORDER BY m.id;

-- name: job_claim_lone
-- job_claim when its order and its limits have nothing to decide: no rule (an operator's limit,
-- rate or pause in kind_setting) applies to the kinds this worker runs, and their queued jobs
-- are all in one lane (job_lane: kind, group, requester, priority). Fair share then has nobody
-- to share with, and the claim is the lane's first due jobs, in due order: what job_claim
-- would take, in a statement a fraction of its size (a claim's cost grows with its plan, even
-- where no row reaches a part of it). The caller passes no declared cap or per-requester cap
-- (with one, it calls job_claim). Otherwise it changes nothing and returns one row whose
-- "declined" is true: the caller then claims with job_claim. Its lanes, its writes and its
-- columns are job_claim's (the fragments claim_lanes, claim_writes and claim_columns).
WITH RECURSIVE ruled AS (
    SELECT EXISTS (
        SELECT 1 FROM kind_setting s
        WHERE (:kinds::text[] IS NULL OR s.kind = ANY(:kinds::text[]))
          AND (s.concurrency IS NOT NULL OR s.starts_per_minute IS NOT NULL
               OR s.paused_at IS NOT NULL)) AS yes
), lanes AS (
    -- job_claim's lane probes, read only as far as a second lane this worker may take from.
{claim_lanes}
), allowed_lanes AS (
    SELECT * FROM lanes WHERE :kinds::text[] IS NULL OR kind = ANY(:kinds::text[]) LIMIT 2
), verdict AS (
    SELECT (SELECT yes FROM ruled) OR (SELECT count(*) FROM allowed_lanes) > 1 AS declined
), picked AS (
    SELECT c.id, c.state FROM allowed_lanes l CROSS JOIN LATERAL (
        SELECT j.id, j.state FROM job j
        WHERE j.state = ANY({claimable}::job_state[]) AND j.kind = l.kind
          AND coalesce(j.origin_group, '') = l.grp AND j.requester = l.requester
          AND j.priority = l.priority AND j.run_at <= now()
          AND j.failures < j.max_attempts
        ORDER BY j.run_at, j.id
        LIMIT :limit::int
        FOR UPDATE OF j SKIP LOCKED
    ) c
    WHERE NOT (SELECT declined FROM verdict)
),
{claim_writes}
), unlisted AS (
    DELETE FROM worker_waiting
    WHERE pid = :waiting_pid AND (SELECT count(*) FROM moved) >= :unlist_at
      AND NOT (SELECT declined FROM verdict)
)
SELECT false AS declined,
{claim_columns}
FROM moved m
UNION ALL
SELECT true, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM verdict WHERE declined
ORDER BY declined, id;

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
    -- A scalar subquery, one primary-key probe per row: as NOT EXISTS the planner may hash the
    -- whole attempt table instead, and a cached plan kept doing so as the table grew.
    SELECT c.*, (c.current_attempt_id IS NOT NULL AND (
                     SELECT a.id FROM attempt a WHERE a.id = c.current_attempt_id) IS NULL) AS raced
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
-- attempt holding the lease; no row when it lost the lease. With it, how far the handler has
-- read its mailbox (:mailbox_read, NULL: as it was); and the job's last park is forgotten: the
-- handler is past it, and waits are counted from this checkpoint on.
UPDATE job SET checkpoint = :state, checkpoint_attempt_id = :attempt_id, checkpoint_at = now(),
               usage = coalesce(:usage, usage), updated_at = now(),
               mailbox_read = coalesce(:mailbox_read, mailbox_read),
               wait_for = NULL, wait_key = NULL, wait_text = NULL, wait_until = NULL,
               wait_since = NULL, wait_number = NULL
WHERE id = :job_id AND current_attempt_id = :attempt_id
RETURNING id;

-- name: job_last_park
-- What an attempt reads when its handler first waits or reads its mailbox: the job's last park
-- (kept since its last checkpoint) and how far that checkpoint read the mailbox. No row: the
-- attempt lost the lease.
SELECT wait_for, wait_number, wait_until, mailbox_read FROM job
WHERE id = :job_id AND current_attempt_id = :attempt_id;

-- name: job_park_prepare
-- Before a park moves jobs running -> waiting (the caller locked them, in this transaction):
-- record what each one's handler waits for, fenced by its attempt, and say whether it is already
-- there: its question no longer open (answered, or closed), a follow-up after :afters, or its
-- time passed. Such a job is queued at once instead (policy.PARKED_SATISFIED). now(): the
-- database's clock, for the due time.
WITH input AS (
    SELECT * FROM unnest(:job_ids::bigint[], :attempt_ids::bigint[], :wait_fors::text[],
                         :keys::text[], :texts::text[], :untils::timestamptz[],
                         :numbers::integer[], :afters::bigint[])
        AS t(job_id, attempt_id, wait_for, key, text, until, number, after)
), looked AS (
    SELECT i.*,
           i.until <= now()
           OR (i.wait_for = 'question' AND EXISTS (
                   SELECT 1 FROM job_question q
                   WHERE q.job_id = i.job_id AND q.key = i.key AND q.status <> 'open'))
           OR (i.wait_for = 'message' AND EXISTS (
                   SELECT 1 FROM job_message m
                   WHERE m.job_id = i.job_id AND m.seq > i.after AND m.question_id IS NULL
                     AND m.refused IS NULL)) AS satisfied
    FROM input i
), recorded AS (
    UPDATE job j SET wait_for = l.wait_for, wait_key = l.key, wait_text = l.text,
                     wait_until = l.until, wait_since = now(), wait_number = l.number
    FROM looked l
    WHERE j.id = l.job_id AND j.current_attempt_id = l.attempt_id
    RETURNING j.id
)
SELECT l.job_id AS id, coalesce(l.satisfied, false) AS satisfied, now() AS at
FROM looked l;

-- name: job_lock_for_mail
-- Lock one job by public id before a message or an answer is recorded for it: seq order, one
-- answer per question, and the job's move out of waiting all hang on this lock. now(): the
-- database's clock, for a due time.
SELECT id, state, current_attempt_id, wait_for, wait_key, now() AS at FROM job
WHERE public_id = :public_id
FOR UPDATE;

-- name: job_waits_due
-- Waiting jobs whose timer passed (their answer's or message's timeout, or their time), locked,
-- skipping rows others hold. {waiting} is a constant, so the plan can use job_wait_due.
SELECT id, public_id, wait_for, wait_key, wait_until FROM job
WHERE state = ANY({waiting}::job_state[]) AND wait_until <= now()
ORDER BY wait_until
LIMIT :limit
FOR UPDATE SKIP LOCKED;

-- name: job_set_usage
-- Record a job's usage from the attempt holding the lease.
UPDATE job SET usage = :usage, updated_at = now()
WHERE id = :job_id AND current_attempt_id = :attempt_id
RETURNING id;

-- name: job_lock_for_attempt
-- Lock a job against state changes while the attempt holding its lease writes an effect.
SELECT id FROM job WHERE id = :job_id AND current_attempt_id = :attempt_id FOR SHARE;

-- name: reaper_due
-- Whether the reaper has anything to do: the four selections below, read without locks, and
-- the database's clock (the reaper's watch, jobs/engine/store/reaper.py). Every worker reaps
-- every second and almost always finds nothing; this one statement, outside any transaction, is
-- then the whole of it. What it misses for being unlocked, the next round finds. {live},
-- {deadline} and {waiting} are constants, as in job_claim, so that its generic plan can use the
-- partial indexes job_live, job_deadline and job_wait_due. A lease runs out as in
-- job_expired_leases, from the reaper's last word on when the database came back (:grace_from,
-- NULL: it never went away).
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
    OR EXISTS (SELECT 1 FROM job j
               WHERE j.state = ANY({waiting}::job_state[]) AND j.wait_until <= now())
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

-- name: job_count_in_states
-- Jobs in :states by kind and state, for the dashboard's overview: each state's entries of
-- job_state_newest, never the finished jobs that make up most of the table.
SELECT kind, state::text AS state, count(*)::bigint AS count
FROM job WHERE state = ANY(:states::job_state[])
GROUP BY kind, state;

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
