"""Worker-side races that the database alone cannot close."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg

from jobs.budget import Budget
from jobs.kinds import Registry
from jobs.settings import WorkerSettings
from jobs.store import JobStore
from jobs.worker import Worker


async def test_a_cancel_notify_arriving_before_the_attempt_is_registered_is_not_lost(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """The claim's COMMIT makes the job visible as running before the worker registers the
    attempt; a cancel NOTIFY in that gap still stops the attempt at once."""
    worker = Worker(store, registry, WorkerSettings(heartbeat_seconds=3600), dsn=db_dsn,
                    budget=Budget(), assets_dir=tmp_path)
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
