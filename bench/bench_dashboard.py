"""The dashboard's job list at scale, and what its indexes cost the writes; writes
docs/performance-dashboard.md.

Run: ``python -m bench.bench_dashboard`` (``--jobs 1000000``, the acceptance size; ``--jobs
100000 --no-write`` for a smoke run). ``DATABASE_URL`` names a server, else an embedded
PostgreSQL is started in a temporary directory.

1. **The list.** ``--jobs`` jobs are written straight into a fresh database (one ``INSERT ...
   SELECT``: states, kinds, requesters, servers and times spread as a busy deployment's, a
   handful of ``unknown`` and ``cancelling`` jobs among them), the table analyzed, and each
   statement of the dashboard's list (``job_search_*``, ``job_search_count``), with each filter
   alone and in the combinations a person uses, is run under ``EXPLAIN (ANALYZE)`` as the store
   runs it (planned for its values): the server's execution time, the min over ``--runs``
   runs, must be under 50 ms. The first page and a page deep in the list (its cursor at the
   middle of the table) are both measured.
2. **What the indexes cost.** The statement behind ``submit_many`` for 10,000 jobs (with an
   origin: jobs and events) and a state change of 10,000 queued jobs (``job_transition``, an
   operator's cancel), each under ``EXPLAIN (ANALYZE)`` in a transaction rolled back, on a
   database of ``--jobs`` jobs, with three sets of indexes, interleaved, min over ``--runs``:
   the indexes before migration 0021, this release's, and this release's plus a trigram GIN
   over the searched text (the alternative to the bounded text search).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from bench.common import bulk_insert_args, fresh_db, server_dsn
from jobs.engine.db import init_connection
from jobs.engine.moves import Row
from jobs.engine.queries import engine_queries
from jobs.engine.state import State
from jobs.engine.views import SEARCH_SCOPE, JobFilter

OUT = Path(__file__).resolve().parents[1] / "docs" / "performance-dashboard.md"
BUDGET_MS = 50.0
BULK = 10_000

# How a busy deployment's jobs spread: (state, share).
STATES = [
    ("succeeded", 0.86),
    ("failed", 0.05),
    ("cancelled", 0.04),
    ("queued", 0.035),
    ("running", 0.01),
    ("waiting", 0.0049),
    ("cancelling", 0.00005),
    ("unknown", 0.00005),
]
KINDS = ["agent", "command", "demo", "sleep", "noop"]  # the last ones rarer (see _GENERATE)
REQUESTERS = 5_000
GROUPS = 200
DAYS = 30

_GENERATE = """
INSERT INTO job (public_id, kind, params, requester, origin, origin_group, state, reason,
                 attempts, current_attempt_id, run_at, created_at, updated_at, started_at,
                 finished_at, cancel_requested_at, wait_for, wait_since)
SELECT lpad(to_hex(g), 12, '0'), k.kind, jsonb_build_object('n', g % 977),
       'discord:' || (floor(power(random(), 3) * $3)::int),
       jsonb_build_object('transport', 'discord', 'task',
                          'task ' || g || ' ' || (ARRAY['deploy', 'report', 'count', 'summarize',
                          'backup', 'review'])[1 + g % 6] || ' ' || md5(g::text)),
       'guild:' || (floor(power(random(), 2) * $4)::int),
       s.state::job_state, NULL,
       CASE WHEN s.state = 'queued' THEN 0 ELSE 1 END,
       CASE WHEN s.state IN ('running', 'cancelling') THEN g END,
       t.at, t.at, t.at, t.at,
       CASE WHEN s.state IN ('succeeded', 'failed', 'cancelled') THEN t.at + interval '5 s' END,
       CASE WHEN s.state = 'cancelling' THEN t.at END,
       CASE WHEN s.state = 'waiting' THEN 'question' END,
       CASE WHEN s.state = 'waiting' THEN t.at END
FROM generate_series($1::bigint, $2::bigint) AS g
-- g * 0: a reference to the row, else the subquery is evaluated once for all rows
CROSS JOIN LATERAL (SELECT random() + g * 0 AS r, random() + g * 0 AS q) AS dice
CROSS JOIN LATERAL (
    SELECT CASE WHEN dice.q < 0.55 THEN 'agent' WHEN dice.q < 0.85 THEN 'command'
                WHEN dice.q < 0.97 THEN 'demo' WHEN dice.q < 0.9995 THEN 'sleep'
                ELSE 'noop' END AS kind
) AS k
CROSS JOIN LATERAL (SELECT $5::text[] AS names, $6::float8[] AS upto) AS d
CROSS JOIN LATERAL (
    SELECT d.names[(SELECT min(i) FROM generate_subscripts(d.upto, 1) AS i
                    WHERE d.upto[i] >= dice.r)] AS state
) AS s
CROSS JOIN LATERAL (
    SELECT now() - make_interval(secs => ($8 - g)::float8 * $7 / $8) AS at
) AS t
"""


@dataclass
class Figures:
    """Execution times (ms) of each list statement, and of the writes under each index set."""

    lists: dict[str, list[float]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    writes: dict[tuple[str, str], list[float]] = field(default_factory=dict)


async def generate(conn: asyncpg.Connection, n: int) -> None:
    """``n`` jobs, created over the last :data:`DAYS` days, oldest first."""
    upto, total = [], 0.0
    for _, share in STATES:
        total += share
        upto.append(total)
    upto[-1] = 1.0
    names = [s for s, _ in STATES]
    chunk = 200_000
    for start in range(1, n + 1, chunk):
        await conn.execute(
            _GENERATE,
            start,
            min(start + chunk - 1, n),
            REQUESTERS,
            GROUPS,
            names,
            upto,
            float(DAYS * 86400),
            n,
        )
    await conn.execute("VACUUM ANALYZE job")


async def plan_ms(conn: asyncpg.Connection, sql: str, args: list[Any]) -> tuple[float, int]:
    """The server's execution time of ``sql`` (EXPLAIN ANALYZE, planned for these values) and
    the rows it returned."""
    plan = await conn.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, *args)
    if isinstance(plan, str):
        plan = json.loads(plan)
    return float(plan[0]["Execution Time"]), int(plan[0]["Plan"]["Actual Rows"])


async def list_cases(conn: asyncpg.Connection) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, statement, parameters) of each list query measured."""
    top_requester = await conn.fetchval(
        "SELECT requester FROM job GROUP BY requester ORDER BY count(*) DESC LIMIT 1"
    )
    rare_requester = await conn.fetchval(
        "SELECT requester FROM job GROUP BY requester ORDER BY count(*), requester LIMIT 1"
    )
    top_group = await conn.fetchval(
        "SELECT origin_group FROM job GROUP BY 1 ORDER BY count(*) DESC LIMIT 1"
    )
    rare_group = await conn.fetchval(
        "SELECT origin_group FROM job GROUP BY 1 ORDER BY count(*), 1 LIMIT 1"
    )
    middle = await conn.fetchval("SELECT (min(id) + max(id)) / 2 FROM job")
    now = datetime.now(UTC)
    filters: list[tuple[str, JobFilter]] = [
        ("no filter", JobFilter()),
        *[(f"state {s.value}", JobFilter(states=(s,))) for s in State],
        (
            "states queued, running, waiting, unknown",
            JobFilter(states=(State.QUEUED, State.RUNNING, State.WAITING, State.UNKNOWN)),
        ),
        ("kind agent (55%)", JobFilter(kind="agent")),
        ("kind noop (0.05%)", JobFilter(kind="noop")),
        ("kind nobody runs", JobFilter(kind="absent")),
        ("requester, the busiest", JobFilter(requester=top_requester)),
        ("requester, the rarest", JobFilter(requester=rare_requester)),
        ("server, the busiest", JobFilter(origin_group=top_group)),
        ("server, the rarest", JobFilter(origin_group=rare_group)),
        ("created in the last hour", JobFilter(since=now - timedelta(hours=1))),
        ("created in the future (none)", JobFilter(since=now + timedelta(hours=1))),
        ("created before 20 days ago", JobFilter(until=now - timedelta(days=20))),
        (
            "created on one day, 10 days ago",
            JobFilter(since=now - timedelta(days=10), until=now - timedelta(days=9)),
        ),
        ("kind noop, state failed", JobFilter(kind="noop", states=(State.FAILED,))),
        ("kind agent, state unknown", JobFilter(kind="agent", states=(State.UNKNOWN,))),
        (
            "requester (busiest), state waiting",
            JobFilter(requester=top_requester, states=(State.WAITING,)),
        ),
        (
            "server (busiest), kind command, state failed, last 3 days",
            JobFilter(
                origin_group=top_group,
                kind="command",
                states=(State.FAILED,),
                since=now - timedelta(days=3),
            ),
        ),
        ("text 'deploy' (common)", JobFilter(text="deploy")),
        ("text absent from every job", JobFilter(text="no such words")),
        ("text 'report', kind noop", JobFilter(text="report", kind="noop")),
    ]
    cases: list[tuple[str, str, dict[str, Any]]] = []
    for label, where in filters:
        base = where.params()
        text = where.literal_text
        if text is None:
            cases.append((label, "job_search_newest", base | {"after": None, "limit": 51}))
            cases.append(
                (
                    f"{label} · middle page",
                    "job_search_newest",
                    base | {"after": middle, "limit": 51},
                )
            )
            cases.append(
                (
                    f"{label} · oldest first",
                    "job_search_oldest",
                    base | {"after": None, "limit": 51},
                )
            )
            cases.append((f"{label} · count to 10,000", "job_search_count", base | {"cap": 10_000}))
        else:
            words = base | {"text": text, "scope": SEARCH_SCOPE, "limit": 51}
            cases.append((label, "job_search_text_newest", words | {"after": None}))
            cases.append(
                (f"{label} · middle page", "job_search_text_newest", words | {"after": middle})
            )
            cases.append(
                (
                    f"{label} · count to 10,000",
                    "job_search_text_count",
                    base | {"text": text, "scope": SEARCH_SCOPE, "cap": 10_000},
                )
            )
    return cases


async def measure_lists(conn: asyncpg.Connection, figures: Figures, runs: int) -> None:
    sql = engine_queries()
    await conn.execute("SET plan_cache_mode = force_custom_plan")  # as JobStore.search does
    cases = await list_cases(conn)
    for _ in range(runs):
        for label, name, params in cases:
            query = sql[name]
            ms, rows = await plan_ms(conn, query.sql, query.args(params))
            figures.lists.setdefault(label, []).append(ms)
            figures.rows[label] = rows


# -- what the indexes cost the writes --------------------------------------------------------

INDEX_SETS: dict[str, list[str]] = {
    "before 0021": [
        "DROP INDEX job_state_newest",
        "DROP INDEX job_requester_newest",
        "DROP INDEX job_kind_newest",
        "DROP INDEX job_group_newest",
        "CREATE INDEX job_state_recent ON job (state, created_at DESC)",
        "CREATE INDEX job_requester_recent ON job (requester, created_at DESC)",
    ],
    "0021": [],
    "0021 + trigram GIN": [
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        "CREATE INDEX job_search_trgm ON job"
        " USING gin (job_search_text(origin, params) gin_trgm_ops)",
    ],
}


async def bulk_ms(conn: asyncpg.Connection) -> float:
    """The server's time of ``submit_many``'s statement for :data:`BULK` jobs with an origin."""
    query = engine_queries()["job_insert_many"]
    origin = {"transport": "discord", "task": "bench", "guild_id": "1"}
    args = bulk_insert_args(BULK, kind="noop", origin=origin, group="guild:1")
    ms, _ = await plan_ms(conn, query.sql, args)
    return ms


async def cancel_ms(conn: asyncpg.Connection) -> float:
    """Wall time of an operator's cancel of :data:`BULK` queued jobs in one ``job_transition``
    (a state change: every index of the job takes a new entry)."""
    from jobs.engine import policy
    from jobs.engine.state import Actor
    from jobs.engine.transition import transition

    ids = [
        r["id"]
        for r in await conn.fetch(
            "SELECT id FROM job WHERE state = 'queued' ORDER BY id DESC LIMIT $1", BULK
        )
    ]
    started = time.perf_counter()
    await transition(conn, policy.cancel(Actor.OPERATOR), [Row(i) for i in ids])
    return (time.perf_counter() - started) * 1000


async def measure_writes(conn: asyncpg.Connection, figures: Figures, runs: int) -> None:
    await init_connection(conn)
    measures: dict[str, Callable[[asyncpg.Connection], Any]] = {
        "bulk submit of 10,000 (server ms)": bulk_ms,
        "cancel of the newest 10,000 queued (ms)": cancel_ms,
    }
    for run in range(runs):
        order = list(INDEX_SETS)
        if run % 2:
            order.reverse()  # interleaved: neither set always runs first
        for name in order:
            for what, measure in measures.items():
                tx = conn.transaction()
                await tx.start()
                try:
                    for statement in INDEX_SETS[name]:
                        await conn.execute(statement)
                    value = await measure(conn)
                finally:
                    await tx.rollback()
                figures.writes.setdefault((name, what), []).append(value)


# -- the report ------------------------------------------------------------------------------


def render(figures: Figures, args: argparse.Namespace) -> str:
    worst = max(min(v) for v in figures.lists.values())
    lines = [
        "# The dashboard's job list at scale",
        "",
        f"Written by `python -m bench.bench_dashboard --jobs {args.jobs} --runs {args.runs}` "
        f"on {datetime.now(UTC):%Y-%m-%d}, {platform.machine()}, Python "
        f"{platform.python_version()}. Every figure is the server's execution time "
        "(`EXPLAIN ANALYZE`), the min over the runs; the list's budget is "
        f"{BUDGET_MS:.0f} ms per statement.",
        "",
        f"## Each filter, {args.jobs:,} jobs",
        "",
        f"The slowest statement took {worst:.1f} ms "
        + ("(within the budget)." if worst < BUDGET_MS else "(**over the budget**)."),
        "",
        "| filter · page | ms (min) | ms (max) | rows |",
        "|---|---:|---:|---:|",
    ]
    for label, values in figures.lists.items():
        lines.append(
            f"| {label} | {min(values):.2f} | {max(values):.2f} | {figures.rows[label]:,} |"
        )
    lines += [
        "",
        "How: the list is ordered by `id` (creation order), and each filter that can be rare has "
        "an index in id order (migration 0021: state, requester, kind, server), so a page reads "
        "about 51 entries of one index whichever filter is set; the planner picks the index for "
        "the call's values (`plan_cache_mode = force_custom_plan` in `JobStore.search`). A time "
        "bound becomes an id bound by bisection on the primary key (`job_first_id_at`, about 20 "
        "probes), widened by 10 minutes, with the exact `created_at` test kept, so no index on "
        "`created_at` is written. The text search has no index: it reads at most "
        f"{SEARCH_SCOPE:,} of the newest jobs the other filters match per page (the page says "
        "so, and the next page searches on from there).",
        "",
        f"## What the indexes cost the writes ({args.jobs:,} jobs in the table)",
        "",
        "| indexes | " + " | ".join(w for w in _writes(figures)) + " |",
        "|---|" + "---:|" * len(_writes(figures)),
    ]
    for name in INDEX_SETS:
        cells = [
            f"{min(figures.writes[(name, w)]):.1f} ({max(figures.writes[(name, w)]):.1f})"
            for w in _writes(figures)
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "min (max) over the runs, interleaved. `before 0021`: the two indexes on `created_at` "
        "that 0021 replaces; `0021`: this release (state, requester, kind and server, each with "
        "`id`); `+ trigram GIN`: what a text index would add (GIN with fastupdate, its pending "
        "list flushed by later writes or autovacuum, a cost this figure does not even hold).",
        "",
    ]
    return "\n".join(lines)


def _writes(figures: Figures) -> list[str]:
    return list(dict.fromkeys(w for _, w in figures.writes))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print; leave the doc alone")
    args = parser.parse_args()
    server = server_dsn()
    dsn = await fresh_db(server, "bench_dashboard")
    conn = await asyncpg.connect(dsn)
    figures = Figures()
    try:
        started = time.perf_counter()
        await generate(conn, args.jobs)
        print(f"generated {args.jobs:,} jobs in {time.perf_counter() - started:.0f} s")
        await measure_lists(conn, figures, args.runs)
        await measure_writes(conn, figures, args.runs)
    finally:
        await conn.close()
    text = render(figures, args)
    print(text)
    if not args.no_write:
        OUT.write_text(text)
        print(f"wrote {OUT}")


if __name__ == "__main__":
    from jobs.logs import configure

    configure("warning", "console")
    asyncio.run(main())
