"""Graceful shutdown of real ``errand worker`` processes: drain, stop cooperatively, release a job
only once nothing of it runs any more, never run an attempt beyond the kind's maximum, and exit
within the shutdown grace plus 5 s whatever a job does (docs/cancellation.md)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest

import tests.support.kinds  # noqa: F401  (registers the test kinds in this process too)
from jobs.engine.store import JobStore
from jobs.engine.views import JobView
from tests.support.cli import CLI, ROOT
from tests.support.polling import poll
from tests.support.runtime import job_reaches

SpawnWorker = Callable[..., Awaitable[asyncio.subprocess.Process]]

# A job that cannot run again from the start, stopped by a shutdown: state, reason, attempts.
STOPPED_MID_RUN = ("unknown", "worker stopped mid-run", 1)


@pytest.fixture
async def spawn_worker(db_dsn: str, tmp_path: Path) -> AsyncIterator[SpawnWorker]:
    """Start ``errand worker`` subprocesses that know the test kinds; killed at the end."""
    procs: list[asyncio.subprocess.Process] = []

    async def start(**env: str) -> asyncio.subprocess.Process:
        log = tmp_path / f"worker-{len(procs)}.log"
        full = (
            os.environ
            | {
                "DATABASE_URL": db_dsn,
                "PYTHONPATH": str(ROOT),
                "ERRAND_EXTRA_KINDS": "tests.support.kinds",
                "ERRAND_DATA_DIR": str(tmp_path / "data"),
                "ERRAND_LOG_FORMAT": "json",
                "ERRAND_WORKER_HEARTBEAT_SECONDS": "0.2",
                "ERRAND_WORKER_LEASE_SECONDS": "2",
                "ERRAND_WORKER_POLL_SECONDS": "0.1",
                "ERRAND_WORKER_REAPER_SECONDS": "0.2",
                "ERRAND_WORKER_RETRY_BASE_SECONDS": "0",
            }
            | env
        )
        with log.open("wb") as sink:
            proc = await asyncio.create_subprocess_exec(
                *CLI, "worker", env=full, cwd=ROOT, stdout=sink, stderr=sink
            )
        procs.append(proc)

        async def started() -> bool:
            assert proc.returncode is None, log.read_text()[-3000:]
            return '"worker.started"' in log.read_text()

        await poll(started, within=30)
        return proc

    yield start
    for proc in procs:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def _exits_within(proc: asyncio.subprocess.Process, seconds: float) -> float:
    started = time.monotonic()
    await asyncio.wait_for(proc.wait(), seconds)
    return time.monotonic() - started


async def test_sigterm_during_run_blocking_never_runs_the_job_twice_at_once(
    store: JobStore, pool: asyncpg.Pool, spawn_worker: SpawnWorker, tmp_path: Path
) -> None:
    """SIGTERM while a job's ``run_blocking`` thread works, a second worker up: the job is
    released only once the thread returned, so the two attempts' work (timestamps written from
    inside the thread) never overlaps; the worker exits within the grace plus 5 s."""
    log = tmp_path / "times.txt"
    job, _ = await store.submit("blocking_probe", {"log": str(log), "seconds": 4}, requester="t")
    first = await spawn_worker(ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS="1")
    await job_reaches(store, job.public_id, {"running"}, within=20)

    async def working() -> bool:
        return log.exists()

    await poll(working)
    second = await spawn_worker()
    first.send_signal(signal.SIGTERM)
    took = await _exits_within(first, 1 + 5)
    assert first.returncode == 0
    done = await job_reaches(store, job.public_id, {"succeeded", "failed", "unknown"}, within=30)
    assert (done.state.value, done.attempts) == ("succeeded", 2)
    spans: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        _, label, at = line.split()
        spans.setdefault(label, []).append(float(at))
    (_, a_end), (b_start, _) = sorted(spans.values())
    assert a_end <= b_start, f"attempts overlapped by {a_end - b_start:.2f} s"
    assert took < 6
    second.send_signal(signal.SIGTERM)
    await _exits_within(second, 10)


def _times(log: Path) -> dict[str, list[float]]:
    """The times each attempt wrote from inside the job, by ``public_id/attempt``."""
    times: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        label, at = line.split()
        times.setdefault(label, []).append(float(at))
    return times


async def test_sigterm_ends_a_worker_whose_thread_never_returns_within_the_grace_plus_5_s(
    store: JobStore, pool: asyncpg.Pool, spawn_worker: SpawnWorker, tmp_path: Path
) -> None:
    """A retry-safe job stuck in a ``run_blocking`` thread that never returns, a second worker
    up: SIGTERM ends the first process within its grace (1 s) plus 5 s, with its job released;
    the thread dies with the process (it writes the time every 50 ms, and nothing after the
    exit), and the second worker starts the job only after the first process is gone."""
    log = tmp_path / "times.txt"
    job, first, second = await _stuck_beside_a_second_worker(
        store, spawn_worker, "stuck_probe", log, 1
    )
    took = await _stop(first)
    exited_at = time.time()  # the first process is gone by now
    assert (first.returncode, took < 1 + 5) == (0, True), took
    done = await job_reaches(store, job.public_id, {"succeeded", "failed", "unknown"}, within=30)
    assert (done.state.value, done.attempts) == ("succeeded", 2)
    outcomes = await pool.fetch(
        "SELECT outcome FROM attempt WHERE job_id = $1 ORDER BY number", job.id
    )
    assert [r["outcome"] for r in outcomes] == ["released", "succeeded"]
    times = _times(log)
    first_attempt, second_attempt = times[f"{job.public_id}/1"], times[f"{job.public_id}/2"]
    assert max(first_attempt) < exited_at, "the stuck thread outlived its process"
    assert min(second_attempt) > exited_at, "the job ran again while the first process lived"
    second.send_signal(signal.SIGTERM)
    await _exits_within(second, 10)


async def test_a_stuck_job_that_cannot_run_again_ends_unknown_and_never_runs_twice(
    store: JobStore, pool: asyncpg.Pool, spawn_worker: SpawnWorker, tmp_path: Path
) -> None:
    """The same stuck thread in a kind that is not retry-safe: SIGTERM ends the process within
    the grace plus 5 s, and the job ends ``unknown`` ("worker stopped mid-run") at once, with
    no second attempt although a second worker is up."""
    log = tmp_path / "times.txt"
    job, first, second = await _stuck_beside_a_second_worker(
        store, spawn_worker, "stuck_once", log, 0.5
    )
    took = await _stop(first)
    assert (first.returncode, took < 0.5 + 5) == (0, True), took
    ended = await store.get(job.public_id)
    assert (ended.state.value, ended.reason, ended.attempts) == STOPPED_MID_RUN
    await asyncio.sleep(2.5)  # past the 2 s lease: a wrongful second attempt would show
    assert set(_times(log)) == {f"{job.public_id}/1"}
    assert (await store.get(job.public_id)).attempts == 1
    second.send_signal(signal.SIGTERM)
    await _exits_within(second, 10)


async def test_a_handler_that_swallows_cancellation_cannot_hold_a_sigterm(
    store: JobStore, pool: asyncpg.Pool, spawn_worker: SpawnWorker
) -> None:
    """A handler that swallows CancelledError and never checks for a stop: one SIGTERM still
    ends the process within the grace plus 5 s; the job, not retry-safe and without a
    checkpoint, ends ``unknown`` ("worker stopped mid-run") with its attempt ended."""
    job, _ = await store.submit("swallower", {"seconds": 120}, requester="t")
    proc = await spawn_worker(ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS="0.5")
    await job_reaches(store, job.public_id, {"running"}, within=20)
    took = await _stop(proc)
    assert (proc.returncode, took < 0.5 + 5) == (0, True), took
    ended = await store.get(job.public_id)
    assert (ended.state.value, ended.reason, ended.attempts) == STOPPED_MID_RUN
    open_attempts = await pool.fetchval(
        "SELECT count(*) FROM attempt WHERE job_id = $1 AND ended_at IS NULL", job.id
    )
    assert open_attempts == 0


async def _stuck_beside_a_second_worker(
    store: JobStore, spawn_worker: SpawnWorker, kind: str, log: Path, grace: float
) -> tuple[JobView, asyncio.subprocess.Process, asyncio.subprocess.Process]:
    """A job of ``kind`` stuck in its thread on a first worker (shutdown grace ``grace``), once
    the thread writes; a second worker up beside it."""
    job, _ = await store.submit(kind, {"log": str(log)}, requester="t")
    first = await spawn_worker(ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS=str(grace))
    await job_reaches(store, job.public_id, {"running"}, within=20)
    await poll(log.exists)
    return job, first, await spawn_worker()


async def _stop(proc: asyncio.subprocess.Process) -> float:
    """SIGTERM ``proc`` once; the seconds until it exited."""
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    await asyncio.wait_for(proc.wait(), 30)
    return time.monotonic() - started


async def test_one_attempt_jobs_stopped_by_a_shutdown_end_unknown_and_never_run_again(
    store: JobStore, pool: asyncpg.Pool, spawn_worker: SpawnWorker, tmp_path: Path
) -> None:
    """Ten jobs of a one-attempt kind; SIGTERM (grace 0.5 s) while they run, a second worker
    up: none runs an attempt beyond its maximum; each ends ``succeeded`` or ``unknown`` with
    the reason "worker stopped mid-run"."""
    log = tmp_path / "attempts.txt"
    jobs = [
        (await store.submit("one_shot", {"log": str(log), "seconds": 3}, requester="t"))[0]
        for _ in range(10)
    ]
    first = await spawn_worker(ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS="0.5")
    for job in jobs:
        await job_reaches(store, job.public_id, {"running"}, within=20)
    second = await spawn_worker()
    first.send_signal(signal.SIGTERM)
    await _exits_within(first, 10)
    ends = [
        await job_reaches(store, j.public_id, {"succeeded", "failed", "unknown"}, within=20)
        for j in jobs
    ]
    await asyncio.sleep(1.0)  # time for a wrongful second attempt to show
    assert {(e.state.value, e.reason) for e in ends} <= {
        ("succeeded", None),
        ("unknown", "worker stopped mid-run"),
    }
    assert all(e.attempts == 1 for e in [await store.get(j.public_id) for j in jobs])
    started = log.read_text().splitlines()
    assert sorted(started) == sorted(f"{j.public_id} 1" for j in jobs)
    over = await pool.fetchval(
        "SELECT count(*) FROM attempt a JOIN job j ON j.id = a.job_id "
        "WHERE a.number > j.max_attempts"
    )
    assert over == 0
    second.send_signal(signal.SIGTERM)
    await _exits_within(second, 10)
