"""Support of the tests that run jobs in this process: a worker with fast timings, waiting for a
job's state, kinds made of a bare handler, and an attempt claimed by hand."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from jobs.engine.store import JobStore
from jobs.engine.views import JobView
from jobs.runtime.budget import Budget
from jobs.runtime.context import Context
from jobs.runtime.registry import Kind, Registry
from jobs.runtime.worker import Worker
from jobs.settings import WorkerSettings
from tests.support.polling import poll

FAST = {
    "heartbeat_seconds": 0.2,
    "lease_seconds": 3.0,
    "poll_seconds": 0.1,
    "reaper_seconds": 0.2,
    "cancel_grace_seconds": 3.0,
    "shutdown_grace_seconds": 1.0,
}


@asynccontextmanager
async def running_worker(
    store: JobStore,
    registry: Registry,
    dsn: str,
    assets_dir: Path | None = None,
    *,
    budget: Budget | None = None,
    **overrides: Any,
) -> AsyncIterator[Worker]:
    """A worker running in this event loop until the block ends (then a graceful stop)."""
    settings = WorkerSettings(**(FAST | overrides))
    worker = Worker(
        store, registry, settings, dsn=dsn, budget=budget or Budget(), assets_dir=assets_dir
    )
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    await asyncio.wait_for(worker.ready.wait(), 5)
    try:
        yield worker
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)


async def job_reaches(
    store: JobStore, public_id: str, states: set[str], within: float = 15.0
) -> JobView:
    """The job once it is in one of ``states``; fails the test after ``within`` seconds, naming
    the state and reason it was left in."""
    return await poll(
        lambda: store.get(public_id),
        within,
        until=lambda job: job.state.value in states,
        what=f"job {public_id} in {' or '.join(sorted(states))}",
        show=lambda job: f"{job.state.value} ({job.reason})",
    )


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


def registry_of(**handlers: Any) -> Registry:
    """A registry of one kind per handler, named by its keyword, without parameters."""
    reg = Registry()
    for name, handler in handlers.items():
        reg.add(Kind(name=name, handler=handler, params=NoParams, description=name))
    return reg


async def noop(ctx: Context, params: NoParams) -> dict[str, Any]:
    return {"ok": True}


async def claim_context(store: JobStore, worker: str, assets: Path) -> Context:
    """Claim one job as ``worker`` and the context its handler would get (no worker runs it)."""
    [claim] = await store.claim(worker, limit=1, lease_seconds=30)
    return Context(claim, store=store, assets_dir=assets)
