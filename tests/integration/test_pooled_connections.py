"""The pool releases connections without a reset query, so nothing a use leaves on a connection
may outlive it: no LISTEN, no advisory lock; and each connection prepares a statement once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg

from jobs.engine.migrate import migrate
from jobs.engine.queries import engine_queries
from jobs.engine.store import JobStore, Quotas, Submission
from jobs.runtime.registry import Registry
from tests.support.rows import every_connection
from tests.support.runtime import job_reaches, running_worker


async def test_pooled_connections_carry_no_listen_no_advisory_lock_and_reuse_statements(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """The pool releases connections without a reset query; after every kind of use (submit,
    quota submit with its advisory lock, bulk submit, claim, finish, cancel, migrate) no pooled
    connection listens or holds an advisory lock, and each keeps one prepared submit."""
    quota_store = JobStore(pool, registry, quotas=Quotas(per_requester=100, per_group=100))
    await quota_store.submit("noop", {}, requester="q", origin_group="g")
    await store.submit_many([Submission("noop") for _ in range(20)])
    await asyncio.gather(*(store.submit("noop", {}, requester="t") for _ in range(30)))
    sleeper, _ = await store.submit("sleep", {"seconds": 600}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        await job_reaches(store, sleeper.public_id, {"running"})
        await store.cancel(sleeper.public_id, by="t")
        await job_reaches(store, sleeper.public_id, {"cancelled"})
    async with pool.acquire() as conn:
        await migrate(conn)

    kept = 0
    async with every_connection(pool) as conns:
        for conn in conns:
            assert await conn.fetchval("SELECT count(*) FROM pg_listening_channels()") == 0
            assert (
                await conn.fetchval(
                    "SELECT count(*) FROM pg_locks "
                    "WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
                )
                == 0
            )
            prepared = await conn.fetchval(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1",
                engine_queries()["job_insert"].sql,
            )
            assert prepared <= 1  # prepared once per connection, then reused
            kept += prepared
    assert kept >= 1
