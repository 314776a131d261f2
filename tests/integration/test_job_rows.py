"""A job's rows (attempts, events, notices in the outbox) after real workloads: they have no
foreign key to their job (migrations/0008_lean_writes.sql), so the statements that write them
must keep the reference themselves and the only delete must take them along; and every path
(bulk and single submits, batched claims, cancels) writes exactly the rows a job's history
calls for."""

from __future__ import annotations

from pathlib import Path

import asyncpg

import tests.support.kinds  # noqa: F401  (registers plain_sleep)
from jobs.engine.admin import prune_batch
from jobs.engine.store import JobStore, Submission
from jobs.runtime.registry import Registry
from tests.support.polling import poll
from tests.support.runtime import job_reaches, running_worker

ORIGIN = {"transport": "test"}

ORPHANS = """
SELECT (SELECT count(*) FROM attempt a WHERE NOT EXISTS (SELECT 1 FROM job j WHERE j.id = a.job_id))
     + (SELECT count(*) FROM event e WHERE NOT EXISTS (SELECT 1 FROM job j WHERE j.id = e.job_id))
     + (SELECT count(*) FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM job j WHERE j.id = o.job_id))
"""


async def test_every_attempt_event_and_notice_belongs_to_a_job_after_a_mixed_workload(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """Submits (one and many, with and without keys), claims, finishes, a cancel, then pruning
    half of them: no row of attempt, event or outbox is left without its job, and each pruned
    job's rows are gone with it."""
    singles = [
        (await store.submit("noop", {}, requester="r", origin=ORIGIN, idempotency_key=f"k{n}"))[0]
        for n in range(5)
    ]
    many = await store.submit_many([Submission("noop", {}, "r", ORIGIN) for _ in range(200)])
    keyed = await store.submit_many(
        [Submission("noop", {}, "r", ORIGIN, idempotency_key=f"b{n}") for n in range(50)]
    )
    sleeper, _ = await store.submit("sleep", {"seconds": 60}, requester="r", origin=ORIGIN)
    ids = [j.public_id for j in singles] + [p for p, _ in many] + [p for p, _ in keyed]
    async with running_worker(store, registry, db_dsn, tmp_path):
        for public_id in ids:
            await job_reaches(store, public_id, {"succeeded"})
        await job_reaches(store, sleeper.public_id, {"running"})
        await store.cancel(sleeper.public_id, by="r")
        await job_reaches(store, sleeper.public_id, {"cancelled"})
    assert await pool.fetchval(ORPHANS) == 0
    counts = await pool.fetchrow(
        "SELECT (SELECT count(*) FROM job) AS jobs, (SELECT count(*) FROM attempt) AS attempts,"
        " (SELECT count(*) FROM event) AS events, (SELECT count(*) FROM outbox) AS notices"
    )
    assert counts is not None
    assert counts["jobs"] == 256
    assert counts["attempts"] == 256
    # queued, running and the end for each; the cancel adds its request (running -> cancelling)
    assert counts["events"] == counts["notices"] == 3 * 256 + 1

    # Pruning: delivered notices only (a pending one keeps its job); deliver them all first.
    await pool.execute("UPDATE outbox SET delivered_at = now()")
    rows, deleted = await prune_batch(pool, 0, False, batch=128)
    assert len(deleted) == 128 == len(rows)
    assert await pool.fetchval(ORPHANS) == 0
    left = await pool.fetchrow(
        "SELECT (SELECT count(*) FROM job) AS jobs, (SELECT count(*) FROM attempt) AS attempts,"
        " (SELECT count(*) FROM event WHERE job_id = ANY($1)) AS events_of_deleted,"
        " (SELECT count(*) FROM outbox WHERE job_id = ANY($1)) AS notices_of_deleted,"
        " (SELECT count(*) FROM attempt WHERE job_id = ANY($1)) AS attempts_of_deleted",
        list(deleted),
    )
    assert left is not None
    assert left["jobs"] == 128
    assert left["attempts"] == 128
    assert left["events_of_deleted"] == left["notices_of_deleted"] == 0
    assert left["attempts_of_deleted"] == 0


async def test_no_path_loses_an_event_or_an_outbox_row(
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
