"""Worker-side races that the database alone cannot close."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import asyncpg

from jobs.engine.store import JobStore
from jobs.runtime.budget import Budget
from jobs.runtime.context import Context
from jobs.runtime.registry import Registry
from jobs.runtime.worker import Worker
from jobs.settings import WorkerSettings
from tests.support.runtime import NoParams, job_reaches, registry_of, running_worker


async def test_a_cancel_notify_arriving_before_the_attempt_is_registered_is_not_lost(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """The claim's COMMIT makes the job visible as running before the worker registers the
    attempt; a cancel NOTIFY in that gap still stops the attempt at once."""
    worker = Worker(
        store,
        registry,
        WorkerSettings(heartbeat_seconds=3600),
        dsn=db_dsn,
        budget=Budget(),
        assets_dir=tmp_path,
    )
    job, _ = await store.submit("sleep", {"seconds": 600}, requester="a")
    [claim] = await store.claim(worker.name, limit=1, lease_seconds=30)
    await store.cancel(job.public_id, by="a")
    worker._on_cancel(None, 0, "errand_cancel", str(claim.attempt_id))  # the NOTIFY, early
    worker._start(claim)
    item = worker.running[claim.attempt_id]
    assert item.ctx.cancelled.is_set()
    await asyncio.wait_for(item.task, 5)  # the sleep handler stops at once
    [finish] = worker._finished
    assert finish.outcome == "cancelled"


async def test_a_refused_outcome_costs_only_itself_and_the_worker_goes_on(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """One outcome PostgreSQL refuses (a NUL in jsonb text) in a batch with a good one: the good
    one lands, the flush loop survives, and the refused job's lease is left to expire."""
    from jobs.engine.moves import Finish

    worker = Worker(
        store,
        registry,
        WorkerSettings(heartbeat_seconds=3600),
        dsn=db_dsn,
        budget=Budget(),
        assets_dir=tmp_path,
    )
    for _ in range(2):
        await store.submit("noop", {}, requester="a")
    good, bad = await store.claim(worker.name, limit=2, lease_seconds=30)
    worker._finished = [
        Finish(good.job_id, good.attempt_id, "succeeded", result={"ok": True}),
        Finish(bad.job_id, bad.attempt_id, "succeeded", result={"text": "nul \x00 here"}),
    ]
    flush = asyncio.create_task(worker._flush_loop())
    worker._flush.set()
    try:
        for _ in range(100):
            if (await store.get(good.public_id)).state.value == "succeeded":
                break
            await asyncio.sleep(0.05)
        assert (await store.get(good.public_id)).state.value == "succeeded"
        assert (await store.get(bad.public_id)).state.value == "running"
        assert not flush.done()
        assert worker._finished == []
        before = await pool.fetchval(
            "SELECT lease_expires_at FROM attempt WHERE id = $1", bad.attempt_id
        )
        await worker.heartbeat()  # no longer renews the refused attempt: the reaper will settle
        after = await pool.fetchval(
            "SELECT lease_expires_at FROM attempt WHERE id = $1", bad.attempt_id
        )
        assert after == before
    finally:
        flush.cancel()


async def test_attempt_that_ends_without_a_recorded_end_does_not_keep_its_lease(
    pool: asyncpg.Pool, db_dsn: str, tmp_path: Path
) -> None:
    """A handler cancelled from inside (no stop asked) must not leave a lease renewed forever."""

    async def self_cancel(ctx: Context, params: NoParams) -> dict[str, Any]:
        raise asyncio.CancelledError

    reg = registry_of(self_cancel=self_cancel)
    store = JobStore(pool, reg)
    job, _ = await store.submit("self_cancel", {}, requester="t")
    async with running_worker(store, reg, db_dsn, tmp_path, lease_seconds=1.0):
        done = await job_reaches(
            store, job.public_id, {"succeeded", "failed", "cancelled", "unknown"}, within=10
        )
    # Its lease expired and the reaper settled it: not retry-safe and no checkpoint, so it
    # cannot run again and nobody knows how far it got (a crash uses up no attempt).
    assert (done.state, done.reason) == (
        "unknown",
        "worker lost mid-run; it cannot safely run again from the start",
    )
