"""A database outage longer than the lease costs no job (docs/state-machine.md, "An outage
longer than the lease").

Real ``errand worker`` processes with a 4 s lease; the database is away for twice that, once as
a restart (stopped, then started again: its start time changes) and once as a network cut that
is not a restart (the workers reach it through a relay that drops every connection). Two workers
ride the outage out: every job they run succeeds in its first attempt, retry-safe or not. A third
worker is SIGKILLed during the outage: its jobs are reaped one lease (the grace) after the
database is back, and within one lease plus the grace.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest

import tests.support.kinds  # noqa: F401  (registers resumer and plain_sleep)
from jobs.engine.db import create_pool, stop_embedded
from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.support.cli import WorkerProc
from tests.support.pg_restart import own_database, start
from tests.support.polling import poll
from tests.support.relay import Relay

LEASE = 4.0
OUTAGE = 2 * LEASE
TIMINGS = {
    "ERRAND_EXTRA_KINDS": "tests.support.kinds",
    "ERRAND_WORKER_LEASE_SECONDS": str(LEASE),
    "ERRAND_WORKER_HEARTBEAT_SECONDS": "0.3",
    "ERRAND_WORKER_REAPER_SECONDS": "0.5",
    "ERRAND_WORKER_POLL_SECONDS": "0.2",
    "ERRAND_WORKER_RETRY_BASE_SECONDS": "0",
}

pytestmark = pytest.mark.slow

SpawnWorker = Callable[..., Awaitable[WorkerProc]]
Outage = Callable[[WorkerProc], Awaitable[datetime]]
"""Takes the database away for :data:`OUTAGE` seconds, SIGKILLs the worker it is given during
that time, and returns when the database was back (the database's clock)."""


def _work(ledger: Path) -> list[tuple[str, dict[str, Any]]]:
    """One job of each sort, each running about 9 s: longer than the time before the outage."""
    return [
        ("demo", {"steps": 30, "step_seconds": 0.3}),  # retry-safe; writes at every step
        ("resumer", {"steps": 120}),  # not retry-safe; writes and checkpoints at every step
        ("plain_sleep", {"ledger": str(ledger), "seconds": 9.0}),  # not retry-safe; no writes
    ]


async def _fetch(dsn: str, query: str, *args: Any) -> list[asyncpg.Record] | None:
    """The rows of ``query`` on a connection of its own, or None while the database is away."""
    try:
        conn = await asyncpg.connect(dsn, timeout=2)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
        return None
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()


async def _submit(store: JobStore, ledger: Path) -> list[str]:
    return [
        (await store.submit(kind, params, requester="t"))[0].public_id
        for kind, params in _work(ledger)
    ]


async def _running(dsn: str, jobs: list[str]) -> None:
    async def all_running() -> bool:
        rows = await _fetch(
            dsn,
            "SELECT count(*) AS n FROM job WHERE public_id = ANY($1) AND state = 'running'",
            jobs,
        )
        return rows is not None and rows[0]["n"] == len(jobs)

    await poll(all_running, within=30, what=f"jobs {jobs} running")


async def _ride_out(
    dsn: str,
    worker_dsn: str,
    registry: Registry,
    spawn_worker: SpawnWorker,
    tmp_path: Path,
    outage: Outage,
) -> None:
    """The scenario, whichever the outage; asserts what it must cost (nothing) and what the
    killed worker's jobs become."""
    pool = await create_pool(dsn, max_size=2)
    store = JobStore(pool, registry)
    env = TIMINGS | {"DATABASE_URL": worker_dsn}
    try:
        # The victim starts alone and fills its three slots; the others then take the rest.
        victim = await spawn_worker(**env, ERRAND_WORKER_CONCURRENCY="3")
        lost = await _submit(store, tmp_path / "victim.ledger")
        await _running(dsn, lost)
        for _ in range(2):
            await spawn_worker(**env)
        kept = [j for n in range(3) for j in await _submit(store, tmp_path / f"{n}.ledger")]
        await _running(dsn, kept)
        # A few reaper rounds first: a reaper that never saw the database before an outage cannot
        # tell the outage from a crash (it grants the grace, but records "abandoned").
        await asyncio.sleep(3 * float(TIMINGS["ERRAND_WORKER_REAPER_SECONDS"]))
    finally:
        await pool.close()
    back = await outage(victim)

    async def settled() -> list[asyncpg.Record] | None:
        rows = await _fetch(
            dsn,
            "SELECT j.public_id, j.kind, j.state::text, j.attempts, "
            "array_agg(a.outcome ORDER BY a.number) AS outcomes FROM job j "
            "JOIN attempt a ON a.job_id = j.id GROUP BY j.id",
        )
        if rows is None or any(r["state"] not in {"succeeded", "unknown"} for r in rows):
            return None
        return rows

    jobs = {r["public_id"]: r for r in await poll(settled, within=90, what="every job settled")}
    assert {j: (jobs[j]["state"], jobs[j]["outcomes"]) for j in kept} == {
        j: ("succeeded", ["succeeded"]) for j in kept
    }
    # The killed worker's jobs: its attempts were lost to the outage, not charged; the
    # retry-safe and the checkpointed job ran again, the other one cannot say how far it got.
    assert {jobs[j]["kind"]: (jobs[j]["state"], jobs[j]["outcomes"]) for j in lost} == {
        "demo": ("succeeded", ["lease_lost", "succeeded"]),
        "resumer": ("succeeded", ["lease_lost", "succeeded"]),
        "plain_sleep": ("unknown", ["lease_lost"]),
    }
    reaped = await _fetch(
        dsn,
        "SELECT e.at FROM event e JOIN job j ON j.id = e.job_id "
        "WHERE j.public_id = ANY($1) AND e.actor = 'system' AND e.from_state = 'running'",
        lost,
    )
    assert reaped is not None
    assert len(reaped) == len(lost)
    after = sorted((r["at"] - back).total_seconds() for r in reaped)
    print(f"killed worker's jobs reaped {after} s after the database was back")
    # Not before the grace (one lease), and within one lease plus the grace.
    assert after[0] >= LEASE, after
    assert after[-1] <= 2 * LEASE, after


async def test_a_restart_twice_the_lease_long_costs_no_job(
    data_root: Path, registry: Registry, spawn_worker: SpawnWorker, tmp_path: Path
) -> None:
    """PostgreSQL stopped for twice the lease, then started: the two workers that stayed up
    finish every job in its first attempt; the killed worker's jobs are reaped after the grace
    (one lease from the server's new start time)."""
    pgdata, dsn = await own_database(data_root)

    async def restart(victim: WorkerProc) -> datetime:
        await asyncio.to_thread(stop_embedded, pgdata)
        victim.proc.send_signal(signal.SIGKILL)
        await asyncio.sleep(OUTAGE)
        await start(pgdata)
        rows = await _fetch(dsn, "SELECT pg_postmaster_start_time() AS at")
        assert rows is not None
        at: datetime = rows[0]["at"]
        return at

    await _ride_out(dsn, dsn, registry, spawn_worker, tmp_path, restart)


async def test_a_network_cut_twice_the_lease_long_costs_no_job(
    db_dsn: str, relay: Relay, registry: Registry, spawn_worker: SpawnWorker, tmp_path: Path
) -> None:
    """The workers' way to PostgreSQL cut for twice the lease, the server itself up (its start
    time unchanged, so only the reapers' own view can tell): the same as a restart."""

    async def cut(victim: WorkerProc) -> datetime:
        await relay.cut()
        victim.proc.send_signal(signal.SIGKILL)
        await asyncio.sleep(OUTAGE)
        # The server's clock just before the way back opens (the server never went away): a
        # reaper can see it back no sooner. Read after the restore, it came late: a new
        # connection of the test's own, made after the reapers had reconnected.
        rows = await _fetch(db_dsn, "SELECT clock_timestamp() AS at")
        assert rows is not None
        at: datetime = rows[0]["at"]
        await relay.restore()
        return at

    await _ride_out(db_dsn, relay.dsn, registry, spawn_worker, tmp_path, cut)
