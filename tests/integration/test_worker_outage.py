"""A worker rides out lost connections and a database that goes away for a while."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncpg

from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.support.pg_restart import start
from tests.support.runtime import job_reaches, running_worker


async def _kill_backends(pool: asyncpg.Pool, *, listeners_only: bool) -> int:
    """Terminate the worker's server connections (not this test's own)."""
    query = (
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        + (" AND query ILIKE 'LISTEN%'" if listeners_only else "")
    )
    async with pool.acquire() as conn:
        killed: int = await conn.fetchval(query)
    return killed


async def test_a_lost_listener_reconnects_and_notifications_wake_the_worker_again(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """Kill the LISTEN connection: the worker reconnects, and a new job starts at once by
    NOTIFY (polling is set to a minute, so only a notification can wake it)."""
    async with running_worker(store, registry, db_dsn, tmp_path, poll_seconds=60.0):
        await asyncio.sleep(0.3)
        assert await _kill_backends(pool, listeners_only=True) == 1
        await asyncio.sleep(1.0)  # reconnect backoff is 0.2 s
        job, _ = await store.submit("noop", {}, requester="a")
        started = time.monotonic()
        await job_reaches(store, job.public_id, {"succeeded"}, within=5)
        assert time.monotonic() - started < 2.0


async def test_jobs_finish_although_every_worker_connection_was_cut_mid_run(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """Cut all of the worker's connections while jobs run: none is lost or left running; each
    ends succeeded with one attempt."""
    jobs = [(await store.submit("sleep", {"seconds": 1.0}, requester="a"))[0] for _ in range(5)]
    async with running_worker(store, registry, db_dsn, tmp_path):
        for job in jobs:
            await job_reaches(store, job.public_id, {"running"})
        assert await _kill_backends(pool, listeners_only=False) >= 1
        for job in jobs:
            done = await job_reaches(
                store, job.public_id, {"succeeded", "failed", "queued"}, within=15
            )
            assert done.state.value == "succeeded"
            assert done.attempts == 1


async def test_the_worker_survives_a_database_restart_and_finishes_its_jobs(
    data_root: Path, registry: Registry, tmp_path: Path
) -> None:
    """Stop the database under a running worker, start it again: the worker neither exits nor
    loses an outcome; every job ends succeeded (retried where its lease ran out)."""
    from jobs.engine.db import create_pool, embedded_dsn, stop_embedded
    from jobs.engine.migrate import migrate

    pgdata = data_root / "pgdata"
    dsn = await asyncio.to_thread(embedded_dsn, pgdata)
    own = await create_pool(dsn, max_size=4)
    async with own.acquire() as conn:
        await migrate(conn)
    own_store = JobStore(own, registry)
    jobs = [(await own_store.submit("sleep", {"seconds": 1.5}, requester="a"))[0] for _ in range(4)]
    try:
        async with running_worker(own_store, registry, dsn, tmp_path) as worker:
            for job in jobs:
                await job_reaches(own_store, job.public_id, {"running"})
            await asyncio.to_thread(stop_embedded, pgdata)
            await asyncio.sleep(2.0)  # the jobs finish while the database is down
            await start(pgdata)  # from another process: the wheel caches servers per process
            for job in jobs:
                done = await job_reaches(
                    own_store, job.public_id, {"succeeded", "failed", "unknown"}, within=20
                )
                assert done.state.value == "succeeded"
            assert not worker.running
    finally:
        await own.close()
