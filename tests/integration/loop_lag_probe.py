"""Run in a fresh interpreter by ``test_loop_lag.py``: a worker with a loop-lag probe runs one
``agent`` job, and the longest stall of the event loop while it starts and runs is printed as
JSON. A fresh process matters: ``openai`` must not be imported yet, as in a worker's first job.

Usage: ``python -m tests.integration.loop_lag_probe DSN``, with the ``ERRAND_AGENT_*`` settings
pointing at a chat server.
"""

from __future__ import annotations

import asyncio
import importlib.abc
import json
import sys
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from jobs.engine.db import create_pool
from jobs.engine.store import JobStore
from jobs.kinds import default_registry
from jobs.runtime.budget import Budget
from jobs.runtime.worker import Worker
from jobs.settings import WorkerSettings
from tests.support.runtime import job_reaches

TICK = 0.005


class ImportWatch(importlib.abc.MetaPathFinder):
    """Records the thread that first imports ``openai`` (finds nothing itself)."""

    def __init__(self) -> None:
        self.thread: str | None = None

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname == "openai" and self.thread is None:
            self.thread = threading.current_thread().name


async def main(dsn: str) -> dict[str, object]:
    openai_before = "openai" in sys.modules
    watch = ImportWatch()
    sys.meta_path.insert(0, watch)
    registry = default_registry()
    pool = await create_pool(dsn, max_size=4)
    store = JobStore(pool, registry)
    settings = WorkerSettings(
        heartbeat_seconds=0.2, lease_seconds=2.0, poll_seconds=0.05, reaper_seconds=0.5
    )
    with TemporaryDirectory() as tmp:
        worker = Worker(store, registry, settings, dsn=dsn, budget=Budget(), assets_dir=Path(tmp))
        stop = asyncio.Event()
        running = asyncio.create_task(worker.run(stop))
        await asyncio.wait_for(worker.ready.wait(), 10)
        lags: list[float] = []
        probing = asyncio.Event()

        async def probe() -> None:
            loop = asyncio.get_running_loop()
            last = loop.time()
            while not probing.is_set():
                await asyncio.sleep(TICK)
                now = loop.time()
                lags.append(now - last - TICK)
                last = now

        prober = asyncio.create_task(probe())
        job, _ = await store.submit("agent", {"prompt": "[script:quick] hi"}, requester="probe")
        started = time.monotonic()
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"}, within=30)
        took = time.monotonic() - started
        probing.set()
        await prober
        stop.set()
        await running
    await pool.close()
    return {
        "openai_imported_before": openai_before,
        "openai_imported_after": "openai" in sys.modules,
        "openai_imported_in": watch.thread,
        "loop_thread": threading.main_thread().name,
        "state": done.state.value,
        "reason": done.reason,
        "max_lag_ms": round(max(lags) * 1000, 1),
        "ticks": len(lags),
        "took_s": round(took, 3),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
