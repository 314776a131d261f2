"""The schema is built from migrations alone, and migrating is serialized and idempotent."""

from __future__ import annotations

import asyncio
import json

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


async def origin_columns_of(conn: asyncpg.Connection, *public_ids: str) -> list[tuple[object, ...]]:
    """(public id, transport, partition) of these jobs, in public id order."""
    rows = await conn.fetch(
        "SELECT public_id, transport, partition FROM job WHERE public_id = ANY($1::text[])"
        " ORDER BY public_id",
        list(public_ids),
    )
    return [tuple(r) for r in rows]


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


async def test_origin_columns_are_backfilled_and_the_binding_keeps_only_what_delivery_learned(
    server_dsn: str,
) -> None:
    """0013: every job's transport and partition come from its origin (a missing partition is
    0, as the outbox poll read it; one that is no integer is 0 too, where the poll's cast used to
    fail); the binding's copies of guild, channel and channel type leave it, each written into
    the origin first where the origin lacked it or said otherwise, and what delivery learned
    stays. The columns follow the origin afterwards."""
    dsn = await create_database(server_dsn, "errand_mig_origin")
    conn = await asyncpg.connect(dsn)
    try:
        await apply_through(conn, 12)
        guild = {"guild_id": "9", "channel_id": "100", "channel_type": 0}
        origins = {
            "sharded": {"transport": "discord", "partition": 4096, **guild, "task": "t"},
            "dm": {"transport": "discord", "guild_id": None, "channel_id": "7", "channel_type": 1},
            "plain": {},
            "junk": {"transport": "other", "partition": "abc"},
            "negative": {"transport": "other", "partition": -3},
            "old": {"transport": "discord", "task": "no place recorded"},
            "moved": {"transport": "discord", **guild, "channel_id": "555"},
        }
        ids = {}
        for name, origin in origins.items():
            ids[name] = await conn.fetchval(
                "INSERT INTO job (public_id, kind, requester, origin) VALUES ($1, 'k', 'r', $2)"
                " RETURNING id",
                name,
                json.dumps(origin),
            )
        bindings = {  # job: (guild, channel, channel type, thread, answer state)
            "sharded": ("9", "100", 0, "200", "succeeded"),
            "dm": (None, "7", 1, "7", None),
            "old": ("9", "101", 5, "300", "running"),
            "moved": ("9", "100", 0, None, None),
        }
        for name, (guild_id, channel, ctype, thread, answered) in bindings.items():
            await conn.execute(
                "INSERT INTO discord_binding (job_id, guild_id, channel_id, channel_type,"
                " thread_id, answer_state) VALUES ($1, $2, $3, $4, $5, $6)",
                ids[name],
                guild_id,
                channel,
                ctype,
                thread,
                answered,
            )
        assert await apply_through(conn, 13) == ["0013_origin_columns"]

        rows = {
            r["public_id"]: r
            for r in await conn.fetch("SELECT public_id, transport, partition, origin FROM job")
        }
        assert {n: (r["transport"], r["partition"]) for n, r in rows.items()} == {
            "sharded": ("discord", 4096),
            "dm": ("discord", 0),
            "plain": (None, 0),
            "junk": ("other", 0),
            "negative": ("other", -3),
            "old": ("discord", 0),
            "moved": ("discord", 0),
        }
        after = {n: json.loads(r["origin"]) for n, r in rows.items()}
        # Where the origin already said it, nothing changed.
        for name in ("sharded", "dm", "plain", "junk", "negative"):
            assert after[name] == origins[name], name
        # An origin without its place gets the binding's; one that disagreed, the binding's.
        assert after["old"] == {
            **origins["old"],
            "guild_id": "9",
            "channel_id": "101",
            "channel_type": 5,
        }
        assert after["moved"] == {**origins["moved"], "channel_id": "100"}

        columns = {
            r["column_name"]
            for r in await conn.fetch(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_name = 'discord_binding'"
            )
        }
        assert not {"guild_id", "channel_id", "channel_type"} & columns
        kept = await conn.fetch(
            "SELECT j.public_id, b.thread_id, b.answer_state::text FROM discord_binding b"
            " JOIN job j ON j.id = b.job_id ORDER BY j.public_id"
        )
        assert [tuple(r) for r in kept] == [
            ("dm", "7", None),
            ("moved", None, None),
            ("old", "300", "running"),
            ("sharded", "200", "succeeded"),
        ]

        # Generated: a changed origin changes them, and a new job has them at once.
        await conn.execute(
            "UPDATE job SET origin = origin || '{\"partition\": 12}' WHERE id = $1", ids["dm"]
        )
        await conn.execute(
            "INSERT INTO job (public_id, kind, requester, origin) VALUES ('new', 'k', 'r',"
            ' \'{"transport": "discord", "partition": 8}\')'
        )
        assert await origin_columns_of(conn, "dm", "new") == [
            ("dm", "discord", 12),
            ("new", "discord", 8),
        ]
    finally:
        await conn.close()


async def test_origin_columns_keep_their_values_and_are_written_once(server_dsn: str) -> None:
    """0025 on a database with jobs: transport and partition keep what they said, as plain
    columns (no expression left to compute on an update); the functions that write them now
    say what 0013's expressions said, for every shape of origin; and an INSERT that leaves them
    out (the previous release's submit) still gets them."""
    dsn = await create_database(server_dsn, "errand_mig_written_once")
    conn = await asyncpg.connect(dsn)
    try:
        await apply_through(conn, 24)
        origins = {
            "sharded": {"transport": "discord", "partition": 3},
            "plain": {},
            "junk": {"transport": "other", "partition": "abc"},
            "negative": {"transport": "other", "partition": -3},
        }
        for name, origin in origins.items():
            await conn.execute(
                "INSERT INTO job (public_id, kind, requester, origin) VALUES ($1, 'k', 'r', $2)",
                name,
                json.dumps(origin),
            )
        query = "SELECT public_id, transport, partition FROM job ORDER BY id"
        before = [tuple(r) for r in await conn.fetch(query)]
        assert before == [
            ("sharded", "discord", 3),
            ("plain", None, 0),
            ("junk", "other", 0),
            ("negative", "other", -3),
        ]

        assert await apply_through(conn, 25) == ["0025_origin_columns_written_once"]
        assert [tuple(r) for r in await conn.fetch(query)] == before
        generated = await conn.fetch(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'job'::regclass"
            " AND attgenerated <> ''"
        )
        assert generated == []
        computed = await conn.fetch(
            "SELECT j.public_id, origin_transport(j.origin), origin_partition(j.origin)"
            " FROM job j ORDER BY j.id"
        )
        assert [tuple(r) for r in computed] == before
        # A writer of the previous release leaves them out: the trigger fills them; one that
        # writes them is taken at its word.
        await conn.execute(
            "INSERT INTO job (public_id, kind, requester, origin) VALUES ('old', 'k', 'r',"
            ' \'{"transport": "discord", "partition": 8}\')'
        )
        await conn.execute(
            "INSERT INTO job (public_id, kind, requester, origin, transport, partition)"
            " VALUES ('new', 'k', 'r', '{\"transport\": \"t\"}', 't', 0)"
        )
        assert await origin_columns_of(conn, "old", "new") == [
            ("new", "t", 0),
            ("old", "discord", 8),
        ]
    finally:
        await conn.close()


async def test_jobs_from_before_waiting_keep_their_meaning(server_dsn: str) -> None:
    """0019 and 0020 on a database with jobs and notices: every existing event is a transition
    (in the outbox view too), no job waits for anything, nothing is in a mailbox, and a
    deadline's index covers waiting jobs from then on."""
    dsn = await create_database(server_dsn, "errand_mig_waiting")
    conn = await asyncpg.connect(dsn)
    try:
        await apply_through(conn, 18)
        job = await conn.fetchval(
            "INSERT INTO job (public_id, kind, requester, origin, state, finished_at)"
            " VALUES ('old', 'k', 'r', '{\"transport\": \"discord\"}', 'succeeded', now())"
            " RETURNING id"
        )
        await conn.execute(
            "INSERT INTO event (job_id, from_state, to_state, actor, reason, notice_at)"
            " VALUES ($1, NULL, 'queued', 'requester', 'submitted', now()),"
            " ($1, 'running', 'succeeded', 'worker', NULL, now())",
            job,
        )
        assert await apply_through(conn, 20) == ["0019_waiting_state", "0020_mailbox"]
        events = await conn.fetch("SELECT topic, question_id FROM event ORDER BY id")
        assert [tuple(e) for e in events] == [("transition", None), ("transition", None)]
        assert {r["topic"] for r in await conn.fetch("SELECT topic FROM outbox")} == {"transition"}
        old = await conn.fetchrow("SELECT * FROM job WHERE id = $1", job)
        assert (old["wait_for"], old["wait_until"], old["mailbox_read"]) == (None, None, 0)
        assert await conn.fetchval("SELECT count(*) FROM job_message") == 0
        index = await conn.fetchval("SELECT pg_get_indexdef('job_deadline'::regclass)")
        assert "'waiting'::job_state" in index
        with pytest.raises(asyncpg.CheckViolationError):  # waiting says what for
            await conn.execute("UPDATE job SET state = 'waiting', finished_at = NULL")
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
