-- Rate budgets shared by the fleet (migrations/0018_rate_budgets.sql).
-- Each query starts with "-- name: NAME" and a line or two saying what it does.

-- name: rate_lock
-- Queue for a scope's budget: the row is locked to the end of the transaction (made on first use).
INSERT INTO rate_scope (scope) VALUES (:scope)
ON CONFLICT (scope) DO UPDATE SET scope = excluded.scope
RETURNING scope;

-- name: rate_take
-- Take :amount from a scope's budget of :per_window in any :window seconds (a sliding window,
-- by the clock now, after the lock was granted), or say how long until enough is free. An
-- amount larger than the whole budget is taken alone, once the window is empty.
WITH recent AS (
    SELECT at, amount, sum(amount) OVER (ORDER BY at ROWS UNBOUNDED PRECEDING) AS freed
    FROM rate_use
    WHERE scope = :scope AND at > clock_timestamp() - make_interval(secs => :window)
), used AS (
    SELECT coalesce(sum(amount), 0) AS n FROM recent
), fits AS (
    SELECT used.n + :amount <= :per_window OR used.n = 0 AS ok FROM used
), taken AS (
    INSERT INTO rate_use (scope, at, amount)
    SELECT :scope, clock_timestamp(), :amount FROM fits WHERE ok
    RETURNING at
), forgotten AS (
    DELETE FROM rate_use
    WHERE scope = :scope AND at < clock_timestamp() - make_interval(secs => 2 * :window)
)
SELECT fits.ok,
       CASE WHEN fits.ok THEN 0 ELSE coalesce((
           SELECT extract(epoch FROM min(r.at) + make_interval(secs => :window)
                                      - clock_timestamp())
           FROM recent r, used
           WHERE used.n - r.freed + :amount <= :per_window OR used.n - r.freed = 0), 0)
       END::float8 AS wait
FROM fits;
