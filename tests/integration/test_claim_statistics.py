"""A worker with a backlog gets the job table analyzed (at start, and when a backlog outgrows the
statistics), so its claims read the first jobs off the claim index instead of sorting the
backlog."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

import jobs.runtime.worker as worker_module
from jobs.engine.queries import engine_queries
from jobs.engine.store import JobStore, Submission
from jobs.runtime.registry import Registry
from tests.support.polling import poll
from tests.support.rows import every_connection
from tests.support.runtime import job_reaches, running_worker


async def test_a_worker_has_the_job_table_analyzed_at_start_and_when_a_backlog_outgrows_it(
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    pool: asyncpg.Pool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fresh database's job table has never been analyzed: a worker starting on a backlog of
    3,000 jobs has it analyzed before its first claim. A backlog that arrives while it runs
    (statistics of an empty table, then 2,000 sleeping jobs) makes its claims come back full,
    and it has the table analyzed again. Afterwards the claim reads the claim index in order."""
    monkeypatch.setattr(worker_module, "STATISTICS_CHECK_SECONDS", 0.2)
    assert await _analyses(pool) == 0
    made = await store.submit_many([Submission("noop", {}, "r") for _ in range(3000)])
    async with running_worker(store, registry, db_dsn, tmp_path):
        assert await _analyses(pool) == 1  # before the worker was ready
        await job_reaches(store, made[-1][0], {"succeeded"}, within=60)

    await pool.execute("DELETE FROM job")
    await _flush_counts(pool)
    await pool.execute("ANALYZE job")  # the statistics of an empty table, missing nothing
    assert await store.refresh_statistics() is False  # fresh statistics: nothing to do
    analyzed = await _analyses(pool)
    async with running_worker(store, registry, db_dsn, tmp_path):
        assert await _analyses(pool) == analyzed  # fresh at start: not analyzed again
        await store.submit_many([Submission("sleep", {"seconds": 0.1}, "r") for _ in range(2000)])
        await poll(lambda: _analyses_reach(pool, analyzed + 1), within=30)

    # With the statistics of a backlog, the claim reads the first due jobs off its index.
    await store.submit_many([Submission("noop", {}, "r") for _ in range(3000)])
    await pool.execute("ANALYZE job")
    claim = engine_queries()["job_claim"]
    plan = "\n".join(
        r[0]
        for r in await pool.fetch(
            "EXPLAIN " + claim.sql,
            *claim.args(
                {
                    "worker": "w",
                    "lease_seconds": 60.0,
                    "limit": 100,
                    "kinds": ["noop"],
                    "declared_caps": [None],
                    "declared_rates": [None],
                    "per_requester": None,
                    "by_group": True,
                    "waiting_pid": None,
                    "unlist_at": 0,
                }
            ),
        )
    )
    assert "Index Scan using job_lane" in plan, plan
    assert "Seq Scan on job" not in plan, plan


async def _analyses(pool: asyncpg.Pool) -> int:
    """How many times the job table was analyzed by a statement (not by autovacuum)."""
    return int(
        await pool.fetchval("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'job'")
    )


async def _flush_counts(pool: asyncpg.Pool) -> None:
    """Have every connection of the pool report the rows it changed to the server's statistics.

    A backend reports them when it goes idle, at most once a second, or when it exits. Without
    this, what the worker changed could reach the statistics after the test's ANALYZE (they then
    look stale), or not before its check (they look fresh whatever happened): the test would
    pass or fail by timing."""
    async with every_connection(pool) as conns:
        for conn in conns:
            await conn.execute("SELECT pg_stat_force_next_flush()")  # reported before it answers


async def _analyses_reach(pool: asyncpg.Pool, n: int) -> bool:
    return await _analyses(pool) >= n
