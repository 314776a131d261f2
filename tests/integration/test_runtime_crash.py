"""Crashes and shutdowns with a real worker process: effects across a SIGKILL between intent and
outcome, and graceful shutdown releasing leases (a second signal stops hard)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

import tests.support.kinds  # noqa: F401  (registers the test kinds in this process too)
from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.support.cli import ROOT
from tests.support.polling import poll
from tests.support.runtime import job_reaches, running_worker


@pytest.fixture
def spawn_worker(db_dsn: str, tmp_path: Path) -> Iterator[object]:
    """Start ``errand worker`` as a subprocess that knows the test kinds."""
    procs: list[subprocess.Popen[bytes]] = []

    def spawn(**env: str) -> subprocess.Popen[bytes]:
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
            }
            | env
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", "from bot.cli import main; main()", "worker"],
            env=full,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        procs.append(proc)
        return proc

    yield spawn
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


async def _crash_between_intent_and_outcome(
    store: JobStore, pool: asyncpg.Pool, spawn: object, ledger: Path, with_lookup: bool
) -> int:
    job, _ = await store.submit(
        "effect_probe",
        {"ledger": str(ledger), "with_lookup": with_lookup, "hold_seconds": 60},
        requester="t",
    )
    proc = spawn()  # type: ignore[operator]

    async def intent_recorded() -> bool:
        status = await pool.fetchval("SELECT status FROM effect WHERE job_id = $1", job.id)
        written = await asyncio.to_thread(lambda: ledger.exists() and ledger.read_text() != "")
        return status == "intent" and written

    await poll(intent_recorded, within=20)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    # Let the lease run out, then settle it as any worker's reaper would.
    await pool.execute(
        "UPDATE attempt SET lease_expires_at = now() - interval '1 second' "
        "WHERE job_id = $1 AND ended_at IS NULL",
        job.id,
    )
    await store.reap(cancel_grace_seconds=10, retry_base=0.001)
    return job.id


async def test_effect_without_lookup_becomes_unknown_after_a_sigkill_and_is_never_repeated(
    store: JobStore,
    registry: Registry,
    pool: asyncpg.Pool,
    db_dsn: str,
    tmp_path: Path,
    spawn_worker: object,
) -> None:
    """SIGKILL between intent and outcome: no lookup, so the job is unknown, not re-run; an
    operator who checked and resolves it as a retry takes responsibility and it runs again."""
    ledger = tmp_path / "ledger.txt"
    job_id = await _crash_between_intent_and_outcome(store, pool, spawn_worker, ledger, False)
    job = await store.get(
        str(await pool.fetchval("SELECT public_id FROM job WHERE id = $1", job_id))
    )
    assert job.state.value == "unknown"
    assert job.reason == "worker lost while a side effect was in flight"
    async with running_worker(store, registry, db_dsn, tmp_path):
        await asyncio.sleep(0.5)  # a worker never picks up an unknown job
        assert (await store.get(job.public_id)).state.value == "unknown"
        assert len(ledger.read_text().splitlines()) == 1
        await store.resolve(
            job.public_id,
            actor=Actor.OPERATOR,
            outcome="retry",
            note="not charged, checked the ledger",
            by="op",
        )
        done = await job_reaches(store, job.public_id, {"succeeded", "failed", "unknown"})
    assert done.state.value == "succeeded"
    assert len(ledger.read_text().splitlines()) == 2


async def test_effect_with_lookup_is_reconciled_after_a_sigkill_without_repeating(
    store: JobStore,
    registry: Registry,
    pool: asyncpg.Pool,
    db_dsn: str,
    tmp_path: Path,
    spawn_worker: object,
) -> None:
    """SIGKILL between intent and outcome: the retry's lookup finds the effect by its key, records
    it as done and the job succeeds; the ledger has exactly one entry."""
    ledger = tmp_path / "ledger.txt"
    job_id = await _crash_between_intent_and_outcome(store, pool, spawn_worker, ledger, True)
    public_id = str(await pool.fetchval("SELECT public_id FROM job WHERE id = $1", job_id))
    assert (await store.get(public_id)).state.value == "queued"
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(store, public_id, {"succeeded", "failed", "unknown"})
    assert done.state.value == "succeeded"
    assert done.result == {"outcome": {"charged": True, "found_by": "lookup"}}
    assert len(ledger.read_text().splitlines()) == 1
    effect = await pool.fetchrow("SELECT status, attempt_id FROM effect WHERE job_id = $1", job_id)
    assert effect["status"] == "done"
    assert done.attempts == 2


async def test_sigterm_releases_leases_and_another_worker_resumes_within_a_second(
    store: JobStore,
    registry: Registry,
    pool: asyncpg.Pool,
    db_dsn: str,
    tmp_path: Path,
    spawn_worker: object,
) -> None:
    """SIGTERM: the worker stops claiming, tells jobs to stop, releases their leases and exits;
    another worker takes the job at once (no waiting for the 2 s lease to expire)."""
    job, _ = await store.submit("sleep", {"seconds": 60}, requester="t")
    proc = spawn_worker(ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS="1")  # type: ignore[operator]
    await job_reaches(store, job.public_id, {"running"}, within=20)
    proc.send_signal(signal.SIGTERM)
    await asyncio.to_thread(proc.wait, 10)
    released = await store.get(job.public_id)
    assert (released.state.value, released.reason) == ("queued", "released by worker shutdown")
    outcomes = await pool.fetch("SELECT outcome FROM attempt WHERE job_id = $1", job.id)
    assert [r["outcome"] for r in outcomes] == ["released"]
    started = time.monotonic()
    async with running_worker(store, registry, db_dsn, tmp_path):
        await job_reaches(store, job.public_id, {"running"})
        took = time.monotonic() - started
        await store.cancel(job.public_id, actor=Actor.REQUESTER, by="t")
    assert took < 1.0


async def test_a_second_signal_stops_hard(
    store: JobStore, pool: asyncpg.Pool, spawn_worker: object
) -> None:
    """A job that ignores the stop request keeps a graceful shutdown waiting; a second SIGTERM
    cuts the grace short; the job stops at once and, its kind not being retry-safe, is not
    queued again but ends ``unknown`` ("worker stopped mid-run")."""
    job, _ = await store.submit("metered", {"sleep": 60}, requester="t")
    proc = spawn_worker(ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS="60")  # type: ignore[operator]
    await job_reaches(store, job.public_id, {"running"}, within=20)
    proc.send_signal(signal.SIGTERM)
    await asyncio.sleep(0.7)
    assert proc.poll() is None  # still waiting for the job
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    await asyncio.to_thread(proc.wait, 10)
    assert time.monotonic() - started < 2.0
    job = await store.get(job.public_id)
    assert (job.state.value, job.reason) == ("unknown", "worker stopped mid-run")
