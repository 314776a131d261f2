"""Scale-out: three ``errand worker`` processes on one database run 2,000 jobs, each exactly once
(one attempt, one claim and one end event per job), and all three do a share of the work."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import asyncpg
import pytest

from jobs.engine.store import JobStore
from tests.support.cli import WorkerProc
from tests.support.http import http_get
from tests.support.polling import poll

JOBS = 2000


async def _ready(worker: WorkerProc) -> bool:
    return (await http_get(worker.port, "/readyz"))[0] == 200


@pytest.mark.slow
async def test_three_workers_run_2000_jobs_exactly_once_and_share_them(
    spawn_worker: Callable[..., Awaitable[WorkerProc]], store: JobStore, pool: asyncpg.Pool
) -> None:
    """Every job succeeded after exactly one attempt, its events are exactly submit -> claim ->
    success with no ignored write, and each of the three workers ran at least 10% of them."""
    # A concurrency below the backlog makes the workers compete for every batch.
    workers = await asyncio.gather(
        *(
            spawn_worker(ERRAND_WORKER_CONCURRENCY="50", ERRAND_WORKER_CLAIM_BATCH="25")
            for _ in range(3)
        )
    )
    for w in workers:
        await poll(lambda w=w: _ready(w), within=30)
    started = time.monotonic()
    for chunk in range(0, JOBS, 100):
        await asyncio.gather(
            *(store.submit("noop", {}, requester=f"r{n % 7}") for n in range(chunk, chunk + 100))
        )

    async def all_done() -> bool:
        done: int = await pool.fetchval("SELECT count(*) FROM job WHERE state = 'succeeded'")
        return done == JOBS

    await poll(all_done, within=120)
    elapsed = time.monotonic() - started

    jobs = await pool.fetchrow(
        "SELECT count(*) AS n, count(*) FILTER (WHERE attempts = 1) AS once FROM job"
    )
    attempts = await pool.fetch(
        "SELECT job_id, count(*) AS n, bool_and(outcome = 'succeeded') AS ok "
        "FROM attempt GROUP BY job_id"
    )
    events = await pool.fetch(
        "SELECT job_id, array_agg(coalesce(from_state::text, '-') || '>' || to_state::text "
        "ORDER BY id) AS path, bool_or(ignored) AS ignored FROM event GROUP BY job_id"
    )
    by_worker = await pool.fetch("SELECT worker, count(*) AS n FROM attempt GROUP BY worker")
    assert (jobs["n"], jobs["once"]) == (JOBS, JOBS)
    assert {(r["n"], r["ok"]) for r in attempts} == {(1, True)}
    assert len(attempts) == JOBS
    assert {(tuple(r["path"]), r["ignored"]) for r in events} == {
        (("->queued", "queued>running", "running>succeeded"), False)
    }
    assert len(events) == JOBS
    shares = sorted(r["n"] for r in by_worker)
    print(f"\n3 workers, {JOBS} noop jobs in {elapsed:.1f} s; jobs per worker: {shares}")
    assert len(shares) == 3
    assert sum(shares) == JOBS
    assert shares[0] >= JOBS // 10
