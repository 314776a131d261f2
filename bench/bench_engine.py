"""Job-record benchmarks; prints figures (no assertions).

Run: ``.venv/bin/python -m bench.bench_engine`` (``DATABASE_URL`` or an embedded PostgreSQL).

1. Submit rate through ``JobStore.submit`` (validation, idempotency key, event, outbox row).
2. No-op throughput of ONE ``errand worker`` process: claim + run + complete, with attempt, event
   and outbox rows written (target >= 4,000 jobs/s on 2 cores). Measured on the database clock,
   from the first claim to the last finish, so process start-up is excluded.
3. Idle enqueue-to-start latency: a worker waits on LISTEN; one job at a time is submitted;
   latency = attempt start - job creation, on the database clock (target p50 <= 3 ms, p99 <= 6 ms).
4. Cancel request-to-observed latency: a running ``sleep`` job is cancelled; latency = the
   attempt's acknowledgement (cancelling -> cancelled event) - the request (running -> cancelling
   event) (target p50 <= 3 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from bench.common import fresh_db, quantile, server_dsn
from jobs.engine.db import create_pool
from jobs.engine.store import JobStore
from jobs.kinds import default_registry

ROOT = Path(__file__).resolve().parents[1]
ORIGIN = {"transport": "bench"}  # a transport origin makes every transition write an outbox row


async def start_worker(dsn: str, **env: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from bot.cli import main; main()",
        "worker",
        env=os.environ | {"DATABASE_URL": dsn, "ERRAND_LOG_LEVEL": "warning", **env},
        cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL,
    )


async def stop_worker(proc: asyncio.subprocess.Process) -> None:
    proc.terminate()
    await proc.wait()


async def submit_rate(server: str, n: int, concurrency: int) -> None:
    dsn = await fresh_db(server, "errand_bench_submit")
    pool = await create_pool(dsn, max_size=concurrency)
    store = JobStore(pool, default_registry())
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await store.submit(
                "noop", {}, requester=f"u{i % 50}", origin=ORIGIN, idempotency_key=f"k{i}"
            )

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    took = time.perf_counter() - started
    print(
        f"submit: {n} jobs in {took:.2f}s = {n / took:,.0f} submits/s "
        f"({concurrency} concurrent connections, one client process)"
    )
    await pool.close()


async def noop_throughput(server: str, n: int) -> None:
    dsn = await fresh_db(server, "errand_bench_noop")
    pool = await create_pool(dsn, max_size=4)
    # Preload with one INSERT per 1,000 rows through the same named query path as submit
    # would be too slow to matter here; the bench measures the worker, not the loader.
    await pool.execute(
        "INSERT INTO job (public_id, kind, params, requester, origin, max_attempts) "
        "SELECT lpad(to_hex(g), 8, '0'), 'noop', '{}', 'bench', $1, 3 "
        "FROM generate_series(1, $2) g",
        ORIGIN,
        n,
    )
    proc = await start_worker(
        dsn, ERRAND_WORKER_CONCURRENCY="1000", ERRAND_WORKER_CLAIM_BATCH="500"
    )
    while await pool.fetchval("SELECT count(*) FROM job WHERE state = 'succeeded'") < n:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    first, last = await pool.fetchrow(
        "SELECT min(a.started_at), max(j.finished_at) FROM job j JOIN attempt a ON a.job_id = j.id"
    )
    took = (last - first).total_seconds()
    rows = await pool.fetchrow(
        "SELECT (SELECT count(*) FROM attempt) a, (SELECT count(*) FROM event) e, "
        "(SELECT count(*) FROM outbox) o"
    )
    print(
        f"noop throughput (one worker process): {n} jobs in {took:.2f}s = {n / took:,.0f} jobs/s "
        f"(rows written: {rows['a']} attempts, {rows['e']} events, {rows['o']} outbox)"
    )
    await stop_worker(proc)
    await pool.close()


@asynccontextmanager
async def idle_worker(server: str, name: str) -> AsyncIterator[tuple[asyncpg.Pool, JobStore]]:
    """A fresh database with one idle worker process listening on it."""
    dsn = await fresh_db(server, name)
    pool = await create_pool(dsn, max_size=2)
    proc = await start_worker(dsn, ERRAND_WORKER_POLL_SECONDS="30")  # NOTIFY, not polling
    await asyncio.sleep(2)  # let the worker start and LISTEN
    try:
        yield pool, JobStore(pool, default_registry())
    finally:
        await stop_worker(proc)
        await pool.close()


async def until(store: JobStore, public_id: str, state: str) -> None:
    while (await store.get(public_id)).state.value != state:  # noqa: ASYNC110
        await asyncio.sleep(0.002)


def report(what: str, latencies: list[float]) -> None:
    print(
        f"{what} over {len(latencies)} jobs: p50 {quantile(latencies, 0.5):.2f} ms, "
        f"p99 {quantile(latencies, 0.99):.2f} ms, max {max(latencies):.2f} ms"
    )


async def start_latency(server: str, n: int) -> None:
    latencies = []
    async with idle_worker(server, "errand_bench_latency") as (pool, store):
        for _ in range(n):
            job, _ = await store.submit("noop", {}, requester="bench", origin=ORIGIN)
            await until(store, job.public_id, "succeeded")
            delta = await pool.fetchval(
                "SELECT extract(epoch FROM a.started_at - j.created_at) FROM job j "
                "JOIN attempt a ON a.job_id = j.id WHERE j.id = $1",
                job.id,
            )
            latencies.append(float(delta) * 1000)
            await asyncio.sleep(0.01)  # idle between jobs
    report("idle enqueue-to-start latency", latencies)


async def cancel_latency(server: str, n: int) -> None:
    latencies = []
    async with idle_worker(server, "errand_bench_cancel") as (pool, store):
        for _ in range(n):
            job, _ = await store.submit("sleep", {"seconds": 60}, requester="bench", origin=ORIGIN)
            await until(store, job.public_id, "running")
            await store.cancel(job.public_id, by="bench")
            await until(store, job.public_id, "cancelled")
            delta = await pool.fetchval(
                "SELECT extract(epoch FROM max(at) FILTER (WHERE to_state = 'cancelled') "
                "- max(at) FILTER (WHERE to_state = 'cancelling')) FROM event WHERE job_id = $1",
                job.id,
            )
            latencies.append(float(delta) * 1000)
    report("cancel request-to-observed latency", latencies)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submits", type=int, default=5000)
    parser.add_argument("--noops", type=int, default=20000)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    server = server_dsn()
    await submit_rate(server, args.submits, concurrency=8)
    await noop_throughput(server, args.noops)
    await start_latency(server, args.samples)
    await cancel_latency(server, args.samples)


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main())
