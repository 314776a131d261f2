"""The schema is built from migrations alone, and migrating is serialized and idempotent."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from jobs.engine.migrate import load, migrate
from jobs.engine.state import Actor, State
from tests.support.databases import create_database


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
        assert {"job", "attempt", "event", "effect", "errand_migration"} <= tables
        views = {
            r["viewname"]
            for r in await conn.fetch("SELECT viewname FROM pg_views WHERE schemaname = 'public'")
        }
        assert "outbox" in views  # notices are events (0009)
        assert await migrate(conn) == []  # idempotent
    finally:
        await conn.close()


async def apply_through(conn: asyncpg.Connection, version: int) -> list[str]:
    """Apply the migrations up to ``version`` (inclusive) as ``migrate`` would, no further."""
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS errand_migration (version integer PRIMARY KEY,"
        " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    done = {r["version"] for r in await conn.fetch("SELECT version FROM errand_migration")}
    names = []
    for m in load():
        if m.version <= version and m.version not in done:
            async with conn.transaction():
                await conn.execute(m.sql)
                await conn.execute(
                    "INSERT INTO errand_migration (version, name) VALUES ($1, $2)",
                    m.version,
                    m.name,
                )
            names.append(m.name)
    return names


async def test_outbox_rows_become_the_notices_of_their_events(server_dsn: str) -> None:
    """Migrating 0009 on a database with outbox rows keeps every notice's delivery state: the
    pending one stays due when it was, the delivered one keeps its message id, the dead one its
    error, and events without an outbox row are no notices."""
    dsn = await create_database(server_dsn, "errand_mig_notices")
    conn = await asyncpg.connect(dsn)
    try:
        await apply_through(conn, 8)
        job = await conn.fetchval(
            "INSERT INTO job (public_id, kind, requester, origin) VALUES ('abc', 'k', 'r',"
            ' \'{"transport": "discord"}\') RETURNING id'
        )
        events = [
            await conn.fetchval(
                "INSERT INTO event (job_id, from_state, to_state, actor, reason)"
                " VALUES ($1, $2, $3, 'worker', $4) RETURNING id",
                job,
                frm,
                to,
                reason,
            )
            for frm, to, reason in [
                (None, "queued", "submitted"),
                ("queued", "running", None),
                ("running", "succeeded", None),
                ("running", "running", "late"),  # no outbox row: not a notice
            ]
        ]
        rows = [
            # (event, available_at offset s, attempts, delivered, dead, error, external id)
            (events[0], -60, 1, True, False, None, "111"),
            (events[1], 30, 3, False, True, "403 Missing Access", None),
            (events[2], 45, 2, False, False, "503", None),
        ]
        for event, offset, attempts, delivered, dead, error, external in rows:
            await conn.execute(
                "INSERT INTO outbox (job_id, event_id, topic, payload, available_at, attempts,"
                " delivered_at, dead_at, last_error, external_id)"
                " SELECT job_id, id, 'transition', jsonb_build_object('from', from_state,"
                "  'to', to_state, 'reason', reason), now() + make_interval(secs => $2), $3,"
                "  CASE WHEN $4 THEN now() END, CASE WHEN $5 THEN now() END, $6, $7"
                " FROM event WHERE id = $1",
                event,
                offset,
                attempts,
                delivered,
                dead,
                error,
                external,
            )
        before = [
            dict(r)
            for r in await conn.fetch(
                "SELECT event_id, topic, payload::jsonb AS payload, available_at, attempts,"
                " delivered_at, dead_at, last_error, external_id FROM outbox ORDER BY event_id"
            )
        ]
        assert await apply_through(conn, 9) == ["0009_notices_are_events"]
        after = [
            dict(r)
            for r in await conn.fetch(
                "SELECT id, event_id, topic, payload::jsonb AS payload, available_at, attempts,"
                " delivered_at, dead_at, last_error, external_id FROM outbox ORDER BY id"
            )
        ]
        assert [r.pop("id") for r in after] == events[:3]  # a notice's id is its event's
        assert after == before
        pending = await conn.fetch(
            "SELECT id FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL"
        )
        assert [r["id"] for r in pending] == [events[2]]
        assert await conn.fetchval("SELECT count(*) FROM event WHERE notice_at IS NULL") == 1
        # A write through the view cannot make a notice vanish from it.
        with pytest.raises(asyncpg.WithCheckOptionViolationError):
            await conn.execute("UPDATE outbox SET available_at = NULL WHERE id = $1", events[2])
        assert await conn.fetchval("SELECT count(*) FROM outbox") == 3
    finally:
        await conn.close()


async def test_old_cancel_reasons_become_the_requesters_own_words(server_dsn: str) -> None:
    """0010: a cancel's reason written as "cancelled by <actor>: <words>" becomes the words alone
    (none when there were none; "(forced)" kept), on jobs and their events; other reasons stay."""
    dsn = await create_database(server_dsn, "errand_mig_reasons")
    conn = await asyncpg.connect(dsn)
    try:
        await apply_through(conn, 9)
        written = {
            "cancelled by requester: Cancel button": "Cancel button",
            "cancelled by operator": None,
            "cancelled by operator: enough (forced)": "enough (forced)",
            "cancelled by operator (forced)": "forced",
            "timed_out": "timed_out",
            "cancelled by the cat": "cancelled by the cat",
        }
        for n, reason in enumerate(written):
            job = await conn.fetchval(
                "INSERT INTO job (public_id, kind, requester, state, reason, finished_at)"
                " VALUES ($1, 'k', 'r', 'cancelled', $2, now()) RETURNING id",
                f"j{n}",
                reason,
            )
            await conn.execute(
                "INSERT INTO event (job_id, from_state, to_state, actor, reason)"
                " VALUES ($1, 'queued', 'cancelled', 'operator', $2)",
                job,
                reason,
            )
        assert await apply_through(conn, 10) == ["0010_cancel_reasons"]
        jobs = [r["reason"] for r in await conn.fetch("SELECT reason FROM job ORDER BY id")]
        events = [r["reason"] for r in await conn.fetch("SELECT reason FROM event ORDER BY id")]
        assert jobs == events == list(written.values())
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
