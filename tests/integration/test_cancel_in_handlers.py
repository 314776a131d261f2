"""A cancel reaching a running handler, on real PostgreSQL with a real worker: at any await (a
handler that uses no Errand API at all), and only after a guarded effect in flight has ended."""

from __future__ import annotations

import time
from pathlib import Path

import asyncpg

import tests.support.kinds  # noqa: F401  (registers plain_sleep and effect_hold)
from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.support.polling import poll
from tests.support.runtime import job_reaches, running_worker


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
        await poll(lambda: _ledger(ledger) == ["started"])
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


async def test_a_cancel_during_an_effect_waits_for_the_effect_and_the_job_ends_cancelled(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """The effect completes and records its outcome; nothing after it runs; then cancelled."""
    ledger = tmp_path / "ledger"
    job, _ = await store.submit(
        "effect_hold", {"ledger": str(ledger), "seconds": 1.0}, requester="t"
    )
    async with running_worker(store, registry, db_dsn, tmp_path, cancel_grace_seconds=60):
        await poll(lambda: _ledger(ledger) == ["effect started"])
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
