"""The schema is built from migrations alone, and migrating is serialized and idempotent."""

from __future__ import annotations

import asyncio

import asyncpg

from jobs.engine.migrate import load, migrate
from jobs.engine.state import Actor, State
from tests.conftest import create_database


async def test_schema_builds_from_migrations_on_an_empty_database(server_dsn: str) -> None:
    """Every migration applies in order on an empty database and is recorded."""
    dsn = await create_database(server_dsn, "errand_mig_empty")
    conn = await asyncpg.connect(dsn)
    try:
        applied = await migrate(conn)
        assert [m.name for m in load()] == applied
        tables = {
            r["tablename"]
            for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
        assert {"job", "attempt", "event", "effect", "outbox", "errand_migration"} <= tables
        assert await migrate(conn) == []  # idempotent
    finally:
        await conn.close()


async def test_two_processes_migrating_together_do_not_race(server_dsn: str) -> None:
    """Concurrent migrate calls apply each file exactly once (advisory lock)."""
    dsn = await create_database(server_dsn, "errand_mig_race")
    conns = [await asyncpg.connect(dsn) for _ in range(4)]
    try:
        results = await asyncio.gather(*(migrate(c) for c in conns))
        assert sorted(len(r) for r in results) == [0, 0, 0, len(load())]
        count = await conns[0].fetchval("SELECT count(*) FROM errand_migration")
        assert count == len(load())
    finally:
        for c in conns:
            await c.close()


async def test_database_enums_match_the_python_states_and_actors(pool: asyncpg.Pool) -> None:
    """The job_state and job_actor enums are exactly jobs.engine.state's."""
    states = await pool.fetchval("SELECT enum_range(NULL::job_state)::text[]")
    actors = await pool.fetchval("SELECT enum_range(NULL::job_actor)::text[]")
    assert [s.value for s in State] == states
    assert [a.value for a in Actor] == actors
