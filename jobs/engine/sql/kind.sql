-- The operator's rules for a kind (kind_setting, migrations/0016_fair_claim.sql) and the line
-- its queued jobs wait in (docs/state-machine.md, "The claim's order").
-- Each query starts with "-- name: NAME" and a line or two saying what it does.

-- name: kind_set_limit
-- Set (or, with NULL, clear) a kind's fleet-wide cap on running jobs; the next claim obeys it.
INSERT INTO kind_setting (kind, concurrency) VALUES (:kind, :concurrency)
ON CONFLICT (kind) DO UPDATE SET concurrency = excluded.concurrency, updated_at = now()
RETURNING *;

-- name: kind_set_rate
-- Set (or, with NULL, clear) a kind's fleet-wide cap on starts per minute.
INSERT INTO kind_setting (kind, starts_per_minute) VALUES (:kind, :starts_per_minute)
ON CONFLICT (kind) DO UPDATE SET starts_per_minute = excluded.starts_per_minute,
                                 updated_at = now()
RETURNING *;

-- name: kind_set_paused
-- Pause a kind (its queued jobs wait; running ones finish) or resume it (:paused false).
INSERT INTO kind_setting (kind, paused_at, paused_by)
VALUES (:kind, CASE WHEN :paused::boolean THEN now() END,
        CASE WHEN :paused::boolean THEN :by::text END)
ON CONFLICT (kind) DO UPDATE SET
    paused_at = CASE WHEN :paused::boolean THEN coalesce(kind_setting.paused_at, now()) END,
    paused_by = CASE WHEN :paused::boolean THEN coalesce(kind_setting.paused_by, :by::text) END,
    updated_at = now()
RETURNING *;

-- name: kind_lines
-- Each kind that has jobs in the line or a rule: its rules, its queued (due, and not yet due)
-- and running jobs, its starts in the last minute and the median run time of its last 50
-- finished jobs. :kinds are the kinds known here (shown even without jobs).
WITH line AS (
    SELECT kind, count(*) FILTER (WHERE run_at <= now()) AS queued,
           count(*) FILTER (WHERE run_at > now()) AS waiting
    FROM job WHERE state = ANY({claimable}::job_state[]) GROUP BY kind
), held AS (
    SELECT kind, count(*) AS running FROM job WHERE state = ANY({live}::job_state[])
    GROUP BY kind
), names AS (
    SELECT kind FROM line UNION SELECT kind FROM held UNION SELECT kind FROM kind_setting
    UNION SELECT unnest(:kinds::text[])
)
SELECT n.kind, coalesce(l.queued, 0) AS queued, coalesce(l.waiting, 0) AS waiting,
       coalesce(h.running, 0) AS running, s.concurrency, s.starts_per_minute,
       s.paused_at IS NOT NULL AS paused,
       (SELECT count(*) FROM kind_start k
        WHERE k.kind = n.kind AND k.at > now() - interval '1 minute') AS started_last_minute,
       (SELECT percentile_cont(0.5) WITHIN GROUP (
                   ORDER BY extract(epoch FROM r.finished_at - r.started_at))
        FROM (SELECT j.finished_at, j.started_at FROM job j
              WHERE j.kind = n.kind AND j.finished_at IS NOT NULL AND j.started_at IS NOT NULL
              ORDER BY j.id DESC LIMIT 50) r) AS p50_seconds
FROM names n
LEFT JOIN line l ON l.kind = n.kind
LEFT JOIN held h ON h.kind = n.kind
LEFT JOIN kind_setting s ON s.kind = n.kind
ORDER BY n.kind;

-- name: job_place
-- Where a queued job stands in its kind's line, by the claim's order: due jobs of its kind of
-- higher priority; of its own lane, those due before it; of every other requester's lane at
-- its priority, those whose turn comes first (fair share: a requester with r running is at
-- r + k for its k-th job). Group fairness and caps are left out: a place, not a promise.
-- No row when the job is not queued.
WITH me AS (
    SELECT j.id, j.kind, j.requester, j.priority, j.run_at, j.run_at <= now() AS due,
           CASE WHEN :by_group::boolean THEN coalesce(j.origin_group, '') ELSE '' END AS grp
    FROM job j WHERE j.id = :id AND j.state = ANY({claimable}::job_state[])
), live AS (
    SELECT j.kind, j.requester,
           CASE WHEN :by_group::boolean THEN coalesce(j.origin_group, '') ELSE '' END AS grp
    FROM job j WHERE j.state = ANY({live}::job_state[])
), queue AS (
    SELECT j.requester, j.priority, j.run_at, j.id,
           CASE WHEN :by_group::boolean THEN coalesce(j.origin_group, '') ELSE '' END AS grp
    FROM job j, me
    WHERE j.state = ANY({claimable}::job_state[]) AND j.kind = me.kind AND j.run_at <= now()
      AND j.priority >= me.priority AND j.id <> me.id
), mine AS (
    SELECT count(*) AS ahead FROM queue q, me
    WHERE q.priority = me.priority AND q.requester = me.requester AND q.grp = me.grp
      AND (q.run_at, q.id) < (me.run_at, me.id)
), turn AS (
    -- My turn among my own: my running jobs, the ones of mine ahead, then me.
    SELECT (SELECT count(*) FROM live x WHERE x.requester = me.requester AND x.grp = me.grp)
           + mine.ahead + 1 AS vr
    FROM me, mine
), others AS (
    SELECT q.requester, q.grp, count(*) AS n FROM queue q, me
    WHERE q.priority = me.priority AND NOT (q.requester = me.requester AND q.grp = me.grp)
    GROUP BY q.requester, q.grp
)
SELECT me.kind, me.due, me.run_at,
       ((SELECT count(*) FROM queue q WHERE q.priority > me.priority)
        + mine.ahead
        + coalesce((SELECT sum(least(o.n, greatest(0, turn.vr - 1 - (
                       SELECT count(*) FROM live x WHERE x.requester = o.requester
                                                    AND x.grp = o.grp))))
                    FROM others o), 0))::bigint AS ahead,
       (SELECT count(*) FROM live x WHERE x.kind = me.kind) AS running,
       s.concurrency, s.starts_per_minute, s.paused_at IS NOT NULL AS paused,
       (SELECT count(*) FROM kind_start k
        WHERE k.kind = me.kind AND k.at > now() - interval '1 minute') AS started_last_minute,
       (SELECT percentile_cont(0.5) WITHIN GROUP (
                   ORDER BY extract(epoch FROM r.finished_at - r.started_at))
        FROM (SELECT j.finished_at, j.started_at FROM job j
              WHERE j.kind = me.kind AND j.finished_at IS NOT NULL AND j.started_at IS NOT NULL
              ORDER BY j.id DESC LIMIT 50) r) AS p50_seconds
FROM me CROSS JOIN mine CROSS JOIN turn LEFT JOIN kind_setting s ON s.kind = me.kind;

-- name: job_queue_depth
-- Queued jobs by kind and priority: due now, and put off (delayed, scheduled, a retry's wait).
SELECT kind, priority, count(*) FILTER (WHERE run_at <= now()) AS due,
       count(*) FILTER (WHERE run_at > now()) AS later
FROM job WHERE state = ANY({claimable}::job_state[])
GROUP BY kind, priority;

-- name: kind_failure_rates
-- Each kind's recent failure rate: of its last :recent finished jobs (job_kind_newest, newest
-- first), how many failed; kinds :kinds only.
SELECT k.kind, r.finished, r.failed
FROM unnest(:kinds::text[]) AS k(kind)
CROSS JOIN LATERAL (
    SELECT count(*) AS finished, count(*) FILTER (WHERE j.state = :failed::job_state) AS failed
    FROM (SELECT state FROM job
          WHERE job.kind = k.kind AND job.state = ANY({terminal}::job_state[])
          ORDER BY job.id DESC LIMIT :recent) j
) AS r;
