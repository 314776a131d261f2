"""Runtime benchmarks; prints figures (no assertions). Run: .venv/bin/python bench/bench_runtime.py

1. N concurrently running sleeping jobs in one worker: RSS of the worker process and heartbeat
   statements per heartbeat interval (target: RSS <= 300 MB at 10,000; one statement per interval
   whatever the job count).
2. End-to-end throughput of the ``demo`` kind with zero-length steps (submit excluded).

Uses ``DATABASE_URL`` when set, else an embedded PostgreSQL in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import fresh_db, server_dsn
from jobs.engine.db import create_pool
from jobs.engine.moves import Verdict
from jobs.engine.store import JobStore
from jobs.kinds import default_registry
from jobs.runtime.budget import Budget
from jobs.runtime.worker import Worker
from jobs.settings import WorkerSettings

DONE = "SELECT count(*) FROM job WHERE state = 'succeeded'"


class CountingStore(JobStore):
    """Counts heartbeat statements (one call == one statement)."""

    heartbeats = 0

    async def heartbeat(
        self, worker: str, lease_seconds: float, attempt_ids: Sequence[int]
    ) -> dict[int, Verdict]:
        self.heartbeats += 1
        return await super().heartbeat(worker, lease_seconds, attempt_ids)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def submit_many(store: JobStore, kind: str, params: dict[str, object], n: int) -> None:
    sem = asyncio.Semaphore(50)

    async def one(i: int) -> None:
        async with sem:
            await store.submit(kind, params, requester=f"bench{i % 100}")

    await asyncio.gather(*(one(i) for i in range(n)))


async def sleeping(server: str, n: int, interval: float) -> None:
    dsn = await fresh_db(server, f"errand_bench_sleep_{n}")
    pool = await create_pool(dsn, max_size=20)
    registry = default_registry()
    store = CountingStore(pool, registry)
    await submit_many(store, "sleep", {"seconds": 3600}, n)
    before = rss_mb()
    settings = WorkerSettings(
        concurrency=n,
        claim_batch=1000,
        heartbeat_seconds=interval,
        lease_seconds=interval * 6,
        poll_seconds=0.5,
    )
    worker = Worker(
        store, registry, settings, dsn=dsn, budget=Budget(), assets_dir=Path(tempfile.mkdtemp())
    )
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    started = time.monotonic()
    while len(worker.running) < n:  # noqa: ASYNC110  (sampling the worker is the point)
        await asyncio.sleep(0.1)
    ramp = time.monotonic() - started
    store.heartbeats = 0
    window = interval * 5
    await asyncio.sleep(window)
    per_interval = store.heartbeats / (window / interval)
    peak = rss_mb()
    print(
        f"sleeping jobs: {n:>6}  claimed all in {ramp:5.1f}s  RSS {peak:6.1f} MB "
        f"(before worker {before:5.1f} MB)  heartbeat statements/interval {per_interval:.1f}"
    )
    stop.set()
    await task
    await pool.close()


async def demo_throughput(server: str, n: int, steps: int) -> None:
    dsn = await fresh_db(server, "errand_bench_demo")
    pool = await create_pool(dsn, max_size=20)
    registry = default_registry()
    store = JobStore(pool, registry)
    await submit_many(store, "demo", {"steps": steps, "step_seconds": 0}, n)
    settings = WorkerSettings(concurrency=200, claim_batch=200, poll_seconds=0.1)
    worker = Worker(
        store, registry, settings, dsn=dsn, budget=Budget(), assets_dir=Path(tempfile.mkdtemp())
    )
    stop = asyncio.Event()
    started = time.monotonic()
    task = asyncio.create_task(worker.run(stop))
    while await pool.fetchval(DONE) < n:  # noqa: ASYNC110  (polling the database)
        await asyncio.sleep(0.05)
    took = time.monotonic() - started
    print(
        f"demo throughput: {n} jobs x {steps} zero-length steps in {took:.2f}s = "
        f"{n / took:.0f} jobs/s, {n * steps / took:.0f} steps/s (concurrency 200)"
    )
    stop.set()
    await task
    await pool.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--demo-jobs", type=int, default=2000)
    parser.add_argument("--demo-steps", type=int, default=5)
    args = parser.parse_args()
    server = server_dsn()
    for n in args.jobs:
        await sleeping(server, n, args.interval)
    await demo_throughput(server, args.demo_jobs, args.demo_steps)


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())
