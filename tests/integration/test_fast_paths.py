"""The one-statement paths (submit, bulk submit, claim, cancel), the pool without reset, and a
cancel that reaches any await, on real PostgreSQL with a real worker."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import replace
from pathlib import Path

import asyncpg
import pytest

import tests.support.kinds  # noqa: F401  (registers the test kinds)
from jobs.engine.migrate import migrate
from jobs.engine.queries import q
from jobs.engine.store import JobStore, Quotas, Submission
from jobs.errors import IdempotencyConflict, InvalidParams, UnknownKind
from jobs.runtime.registry import Registry
from tests.support.polling import poll
from tests.support.rows import every_connection
from tests.support.runtime import job_reaches, running_worker

ORIGIN = {"transport": "test"}


def _ledger(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_a_cancel_reaches_a_handler_awaiting_plain_asyncio_sleep(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """The handler uses no Errand API at all; the cancel still stops it at its await, at once,
    acknowledged by the worker (not forced by the reaper after the grace)."""
    ledger = tmp_path / "ledger"
    job, _ = await store.submit("plain_sleep", {"ledger": str(ledger)}, requester="t")
    async with running_worker(
        store, registry, db_dsn, tmp_path, cancel_grace_seconds=60, heartbeat_seconds=3600
    ):
        await job_reaches(store, job.public_id, {"running"})
        await poll(lambda: _async(_ledger(ledger) == ["started"]))
        asked = time.monotonic()
        outcome = await store.cancel(job.public_id, by="t")
        assert outcome.outcome == "cancelling"
        done = await job_reaches(store, job.public_id, {"cancelled", "succeeded", "failed"}, 5)
        took = time.monotonic() - asked
    assert done.state.value == "cancelled"
    assert took < 2.0  # the grace is 60 s and heartbeats are off: only the NOTIFY can do it
    assert _ledger(ledger) == ["started", "saw CancelledError"]
    last = await pool.fetchrow(
        "SELECT from_state::text, to_state::text, actor::text FROM event WHERE job_id = $1 "
        "ORDER BY id DESC LIMIT 1",
        done.id,
    )
    assert tuple(last) == ("cancelling", "cancelled", "worker")
    assert await pool.fetchval("SELECT outcome FROM attempt WHERE job_id = $1", done.id) == (
        "cancelled"
    )


async def _async(value: bool) -> bool:
    return value


async def test_a_cancel_during_an_effect_waits_for_the_effect_and_the_job_ends_cancelled(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """The effect completes and records its outcome; nothing after it runs; then cancelled."""
    ledger = tmp_path / "ledger"
    job, _ = await store.submit(
        "effect_hold", {"ledger": str(ledger), "seconds": 1.0}, requester="t"
    )
    async with running_worker(store, registry, db_dsn, tmp_path, cancel_grace_seconds=60):
        await poll(lambda: _async(_ledger(ledger) == ["effect started"]))
        await store.cancel(job.public_id, by="t")
        assert (await store.get(job.public_id)).state.value == "cancelling"
        assert _ledger(ledger) == ["effect started"]  # the effect is still running
        done = await job_reaches(store, job.public_id, {"cancelled", "succeeded", "failed"}, 10)
    assert done.state.value == "cancelled"
    assert _ledger(ledger) == ["effect started", "effect done"]  # not "after the effect"
    effect = await pool.fetchrow(
        "SELECT status, outcome, completed_at FROM effect WHERE job_id = $1", done.id
    )
    assert (effect["status"], effect["outcome"]) == ("done", {"done": True})
    ended = await pool.fetchrow(
        "SELECT actor::text, at FROM event WHERE job_id = $1 AND to_state = 'cancelled'", done.id
    )
    assert ended["actor"] == "worker"
    assert ended["at"] >= effect["completed_at"]


async def test_concurrent_duplicate_bulk_submits_stay_idempotent(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Four bulk submits at once share 300 keys (each in its own order, some repeated inside a
    batch) and carry 50 rows without a key each: every key makes exactly one job, every call
    names that job for the key, and every job has its event and outbox row."""
    keys = [f"k{i}" for i in range(300)]

    def batch(seed: int) -> list[Submission]:
        mine = keys + keys[:20]  # repeats inside the batch
        random.Random(seed).shuffle(mine)
        rows = [Submission("noop", {}, "t", ORIGIN, None, k) for k in mine]
        return rows + [Submission("noop", {}, "t", ORIGIN) for _ in range(50)]

    batches = [batch(seed) for seed in range(4)]
    answers = await asyncio.gather(*(store.submit_many(b) for b in batches))

    by_key: dict[str, set[str]] = {}
    made = 0
    for rows, answer in zip(batches, answers, strict=True):
        assert len(answer) == len(rows)
        for row, (public_id, created) in zip(rows, answer, strict=True):
            if row.idempotency_key is not None:
                by_key.setdefault(row.idempotency_key, set()).add(public_id)
                made += created
    assert all(len(ids) == 1 for ids in by_key.values())
    assert len(by_key) == 300
    assert made == 300  # each key created once, whichever call won it
    counts = await pool.fetchrow(
        "SELECT (SELECT count(*) FROM job WHERE idempotency_key IS NOT NULL) AS keyed,"
        " (SELECT count(*) FROM job) AS jobs, (SELECT count(*) FROM event) AS events,"
        " (SELECT count(*) FROM outbox) AS outbox"
    )
    assert dict(counts) == {"keyed": 300, "jobs": 500, "events": 500, "outbox": 500}
    stored = {
        r["idempotency_key"]: r["public_id"]
        for r in await pool.fetch("SELECT idempotency_key, public_id FROM job")
        if r["idempotency_key"]
    }
    assert stored == {k: next(iter(ids)) for k, ids in by_key.items()}


async def test_a_bulk_submit_stores_each_rows_own_values_whether_a_column_varies_or_repeats(
    store: JobStore, registry: Registry, pool: asyncpg.Pool
) -> None:
    """A column every row shares is sent once, a column that varies per row: either way each
    job keeps its own kind, params, requester, origin, group, key, attempts and deadline, with
    and without idempotency keys in the batch."""
    shared = [Submission("noop", {}, "t", ORIGIN, "g") for _ in range(3)]
    # Params are validated once per kind and params object: one object shared by two kinds,
    # and empty params of two kinds whose models differ, are each validated by their own kind.
    seconds = {"seconds": 2}
    varied = [
        Submission("noop", {}, "ann", None),
        Submission("busy", seconds, "bob", {"transport": "x", "n": 1}, "g1"),
        Submission("deadlined", seconds, "ann", ORIGIN, "g2"),
        Submission("crashy", {}, "cy", {"transport": "y"}),
    ]
    keyed = [
        replace(sub, idempotency_key=key)
        for sub, key in zip(varied, ["key-a", None, "key-c", "key-d"], strict=True)
    ]
    for batch in (shared, varied, keyed):
        answer = await store.submit_many(batch)
        assert [created for _, created in answer] == [True] * len(batch)
        for sub, (public_id, _) in zip(batch, answer, strict=True):
            spec = registry.get(sub.kind)
            job = await pool.fetchrow(
                "SELECT j.*, extract(epoch FROM j.deadline_at - j.created_at) AS within,"
                " (SELECT count(*) FROM outbox o WHERE o.job_id = j.id) AS notices"
                " FROM job j WHERE public_id = $1",
                public_id,
            )
            assert job is not None
            assert (job["kind"], job["params"], job["requester"]) == (
                sub.kind,
                spec.validate(sub.params),
                sub.requester,
            )
            assert (job["origin"], job["origin_group"], job["idempotency_key"]) == (
                sub.origin or {},
                sub.origin_group,
                sub.idempotency_key,
            )
            assert job["max_attempts"] == spec.max_attempts
            assert job["within"] == spec.deadline_seconds  # None: no deadline
            assert job["notices"] == (1 if sub.origin else 0)
    assert [spec.max_attempts for spec in map(registry.get, ("noop", "busy"))] == [3, 1]


async def test_a_bulk_submit_with_one_bad_row_creates_nothing(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    rows = [Submission("noop"), Submission("sleep", {"seconds": 1}), Submission("sleep", {"x": 1})]
    with pytest.raises(InvalidParams, match="row 2"):
        await store.submit_many(rows)
    with pytest.raises(UnknownKind, match="row 1"):
        await store.submit_many([Submission("noop"), Submission("nope")])
    assert await pool.fetchval("SELECT count(*) FROM job") == 0


async def test_a_bulk_submit_that_reuses_a_key_for_another_request_creates_nothing(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Like submit: a key names one request. Reused for other params (in the database, or
    inside the batch), the whole batch is refused and nothing is written."""
    await store.submit_many([Submission("sleep", {"seconds": 1}, idempotency_key="k")])
    before = await pool.fetchval("SELECT count(*) FROM job")
    with pytest.raises(IdempotencyConflict):
        await store.submit_many(
            [Submission("noop"), Submission("sleep", {"seconds": 2}, idempotency_key="k")]
        )
    with pytest.raises(InvalidParams, match="row 1"):
        await store.submit_many(
            [
                Submission("sleep", {"seconds": 3}, idempotency_key="j"),
                Submission("sleep", {"seconds": 4}, idempotency_key="j"),
            ]
        )
    assert await pool.fetchval("SELECT count(*) FROM job") == before == 1
    [(same, created)] = await store.submit_many(
        [Submission("sleep", {"seconds": 1}, idempotency_key="k")]
    )
    assert not created
    assert same == await pool.fetchval("SELECT public_id FROM job WHERE idempotency_key = 'k'")


async def test_a_bulk_submit_under_quotas_still_counts_each_row(
    pool: asyncpg.Pool, registry: Registry
) -> None:
    store = JobStore(pool, registry, quotas=Quotas(per_requester=2))
    from jobs.errors import QuotaExceeded

    with pytest.raises(QuotaExceeded):
        await store.submit_many([Submission("noop", requester="q") for _ in range(3)])
    assert await pool.fetchval("SELECT count(*) FROM job WHERE requester = 'q'") == 2


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
                q("job_insert"),
            )
            assert prepared <= 1  # prepared once per connection, then reused
            kept += prepared
    assert kept >= 1


async def test_the_fast_paths_lose_no_event_and_no_outbox_row(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A bench-sized mix through every fast path (bulk and single submits, batched claims,
    cancels of queued and running jobs): every job has exactly the attempts, events and
    outbox rows its history calls for."""
    ledger = tmp_path / "ledger"
    await store.submit_many([Submission("noop", {}, "t", ORIGIN) for _ in range(2000)])
    for _ in range(200):
        await store.submit("noop", {}, requester="t", origin=ORIGIN)
    queued = [
        (await store.submit("sleep", {"seconds": 600}, requester="t", origin=ORIGIN))[0]
        for _ in range(10)
    ]
    for job in queued:
        await store.cancel(job.public_id, by="t")
    sleepers = [
        (await store.submit("plain_sleep", {"ledger": str(ledger)}, requester="t", origin=ORIGIN))[
            0
        ]
        for _ in range(10)
    ]
    async with running_worker(store, registry, db_dsn, tmp_path):
        for job in sleepers:
            await job_reaches(store, job.public_id, {"running"}, 30)
            await store.cancel(job.public_id, by="t")
        await poll(
            lambda: _count(pool, "SELECT count(*) FROM job WHERE finished_at IS NULL", 0), 60
        )
    rows = await pool.fetch(
        "SELECT j.kind, j.state::text AS state,"
        " (SELECT count(*) FROM attempt a WHERE a.job_id = j.id) AS attempts,"
        " (SELECT array_agg(e.to_state::text ORDER BY e.id) FROM event e"
        "   WHERE e.job_id = j.id AND NOT e.ignored) AS events,"
        " (SELECT array_agg(o.payload->>'to' ORDER BY o.id) FROM outbox o"
        "   WHERE o.job_id = j.id) AS outbox,"
        " (SELECT bool_and(e.attempt_id IS NOT NULL) FROM event e"
        "   WHERE e.job_id = j.id AND e.to_state = 'running') AS claim_names_attempt"
        " FROM job j"
    )
    histories: dict[tuple[str, str, int, tuple[str, ...]], int] = {}
    for r in rows:
        assert r["events"] == r["outbox"]  # one outbox row per event, in the same order
        if r["attempts"]:
            assert r["claim_names_attempt"]
        key = (r["kind"], r["state"], r["attempts"], tuple(r["events"]))
        histories[key] = histories.get(key, 0) + 1
    assert histories == {
        ("noop", "succeeded", 1, ("queued", "running", "succeeded")): 2200,
        ("sleep", "cancelled", 0, ("queued", "cancelled")): 10,
        ("plain_sleep", "cancelled", 1, ("queued", "running", "cancelling", "cancelled")): 10,
    }


async def _count(pool: asyncpg.Pool, sql: str, expected: int) -> bool:
    return bool(await pool.fetchval(sql) == expected)
