"""Attempts counted by cause, checkpoints that resume, and progress that never goes backwards,
against real PostgreSQL (store level and an in-process worker)."""

from __future__ import annotations

import asyncio
import re
import signal
import time
from asyncio.subprocess import DEVNULL
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

import tests.support.kinds  # noqa: F401  (registers resumer and crashy)
from jobs.engine.moves import Finish
from jobs.engine.store import JobStore
from jobs.errors import LeaseLost
from jobs.runtime.budget import Budget, BudgetExceeded
from jobs.runtime.context import Context
from jobs.runtime.registry import Registry
from tests.support.cli import CLI, ROOT, cli_environment
from tests.support.pg_restart import start
from tests.support.polling import poll
from tests.support.rows import expire_lease
from tests.support.runtime import job_reaches, running_worker


async def _outcomes(pool: asyncpg.Pool, job_id: int) -> list[str | None]:
    rows = await pool.fetch("SELECT outcome FROM attempt WHERE job_id = $1 ORDER BY number", job_id)
    return [r["outcome"] for r in rows]


async def test_release_crash_and_outage_are_attempts_and_only_handler_failures_count(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """A release, a crash and a lease lost in a database outage each start a new attempt and
    use up none of max_attempts; a handler failure does. Each is its own attempt record."""
    job, _ = await store.submit("sleep", {"seconds": 60}, requester="a")

    async def claim_next() -> int:
        [claim] = await store.claim("w", limit=1, lease_seconds=30)
        return claim.attempt_id

    await store.finish_one(Finish(job.id, await claim_next(), "released"))
    await claim_next()
    await expire_lease(pool, job.id)  # the worker died: no heartbeat since
    assert await store.reap(cancel_grace_seconds=60, retry_base=0) == {"retried": 1}
    await claim_next()
    # The database restarted after the attempt's last heartbeat: an outage, not a crash.
    await pool.execute(
        "UPDATE attempt SET heartbeat_at = pg_postmaster_start_time() - interval '1 s' "
        "WHERE job_id = $1 AND ended_at IS NULL",
        job.id,
    )
    await expire_lease(pool, job.id)
    assert await store.reap(cancel_grace_seconds=60, retry_base=0) == {"retried": 1}
    view = await store.get(job.public_id)
    assert (view.state.value, view.attempts, view.failures) == ("queued", 3, 0)
    assert view.reason == "lease lost in a database outage; retrying"
    attempt = await claim_next()
    await store.finish_one(
        Finish(
            job.id, attempt, "retry", error={"type": "E", "message": "x"}, run_at=datetime.now(UTC)
        )
    )
    view = await store.get(job.public_id)
    assert (view.attempts, view.failures, view.max_attempts) == (4, 1, 3)
    assert view.attempt_line == "attempt 4 · 1 failure (max 3)"
    assert await _outcomes(pool, job.id) == ["released", "abandoned", "lease_lost", "retry"]


async def test_a_claim_never_starts_an_attempt_beyond_the_maximum(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """A queued job whose failures reached max_attempts is never claimed."""
    job, _ = await store.submit("sleep", {}, requester="a")
    await pool.execute("UPDATE job SET failures = max_attempts WHERE id = $1", job.id)
    assert await store.claim("w", limit=10, lease_seconds=30) == []
    assert (await store.get(job.public_id)).attempts == 0


async def test_a_counted_crash_uses_an_attempt_and_the_last_one_fails(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """A kind that counts crashes: three crashes use up its three attempts, then it fails."""
    job, _ = await store.submit("crashy", {"seconds": 60}, requester="a")
    for _ in range(3):
        assert len(await store.claim("w", limit=1, lease_seconds=30)) == 1
        await expire_lease(pool, job.id)
        await store.reap(cancel_grace_seconds=60, retry_base=0)
    view = await store.get(job.public_id)
    assert (view.state.value, view.attempts, view.failures) == ("failed", 3, 3)
    assert view.reason == "lease expired; no attempts left"


async def test_a_crashed_job_that_cannot_rerun_is_unknown_unless_it_checkpointed(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Not retry-safe: without a checkpoint a crash leaves it unknown (it may have done
    anything); with one it is queued to resume from it."""
    fresh, _ = await store.submit("resumer", {}, requester="a")
    saved, _ = await store.submit("resumer", {}, requester="a")
    claims = await store.claim("w", limit=2, lease_seconds=30)
    mine = {c.job_id: c for c in claims}
    await pool.execute(
        'UPDATE job SET checkpoint = \'{"done": 1, "seen": [1]}\' WHERE id = $1', saved.id
    )
    for job in (fresh, saved):
        await expire_lease(pool, job.id)
    assert await store.reap(cancel_grace_seconds=60, retry_base=0) == {"unknown": 1, "retried": 1}
    lost = await store.get(fresh.public_id)
    assert (lost.state.value, lost.failures) == ("unknown", 0)
    assert lost.reason == "worker lost mid-run; it cannot safely run again from the start"
    again = await store.get(saved.public_id)
    assert (again.state.value, again.reason) == ("queued", "lease expired; resuming")
    [claim] = await store.claim("w", limit=1, lease_seconds=30)
    assert claim.resume_state == {"done": 1, "seen": [1]}
    assert (mine[saved.id].attempt, claim.attempt) == (1, 2)


async def test_a_checkpoint_is_fenced_by_the_attempt(store: JobStore, pool: asyncpg.Pool) -> None:
    """An attempt that lost its lease cannot save a checkpoint; the current one can, and the
    steps it left open when it crashed are closed as interrupted."""
    job, _ = await store.submit("demo", {"steps": 3}, requester="a")
    [first] = await store.claim("w", limit=1, lease_seconds=30)
    old = Context(first, store=store)
    async with old.step("step 1"):
        await old.checkpoint({"done": 1})
    # Crash inside step 2: it stays open until the reaper ends the attempt.
    step = old.step("step 2")
    await step.__aenter__()
    await expire_lease(pool, job.id)
    await store.reap(cancel_grace_seconds=60, retry_base=0)
    [second] = await store.claim("w", limit=1, lease_seconds=30)
    assert second.resume_state == {"done": 1}
    with pytest.raises(LeaseLost):
        await old.checkpoint({"done": 99})
    steps = await pool.fetch(
        "SELECT name, outcome FROM step WHERE job_id = $1 ORDER BY number", job.id
    )
    assert [(s["name"], s["outcome"]) for s in steps] == [
        ("step 1", "ok"),
        ("step 2", "interrupted"),
    ]
    row = await pool.fetchrow(
        "SELECT checkpoint, checkpoint_attempt_id FROM job WHERE id = $1", job.id
    )
    assert (row["checkpoint"], row["checkpoint_attempt_id"]) == ({"done": 1}, first.attempt_id)


async def test_progress_never_goes_backwards(store: JobStore) -> None:
    """A report below the recorded done is not written; an equal or higher one is."""
    job, _ = await store.submit("sleep", {}, requester="a")
    [claim] = await store.claim("w", limit=1, lease_seconds=30)
    assert await store.set_progress(job.id, claim.attempt_id, {"done": 5, "total": 9})
    assert not await store.set_progress(job.id, claim.attempt_id, {"done": 2, "total": 9})
    assert await store.set_progress(job.id, claim.attempt_id, {"done": 5, "total": 9, "note": "x"})
    view = await store.get(job.public_id)
    assert view.progress_line == "Step 5 of 9 · x"


async def test_a_resumable_kind_continues_after_a_graceful_stop(
    store: JobStore, registry: Registry, pool: asyncpg.Pool, db_dsn: str, tmp_path: Path
) -> None:
    """A worker stopped while a not-retry-safe, checkpointing kind runs: the job is released,
    and the next worker resumes it after its last checkpoint; no part runs twice."""
    job, _ = await store.submit("resumer", {"steps": 40}, requester="a")

    async def some_done() -> bool:
        query = "SELECT checkpoint IS NOT NULL FROM job WHERE id = $1"
        return bool(await pool.fetchval(query, job.id))

    async with running_worker(store, registry, db_dsn, tmp_path):
        await poll(some_done)
    released = await store.get(job.public_id)
    assert released.state.value == "queued"
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(
            store, job.public_id, {"succeeded", "failed", "unknown"}, within=30
        )
    assert (done.state.value, done.attempts, done.failures) == ("succeeded", 2, 0)
    assert done.result == {"seen": [1, 2]}
    ok = await pool.fetch(
        "SELECT name FROM step WHERE job_id = $1 AND outcome = 'ok' ORDER BY number", job.id
    )
    assert [r["name"] for r in ok] == [f"part {n}" for n in range(1, 41)]
    assert done.usage["steps"] == 40


async def test_the_per_job_time_bound_covers_every_attempt(
    store: JobStore, registry: Registry, pool: asyncpg.Pool, db_dsn: str, tmp_path: Path
) -> None:
    """An attempt ran 0.4 s and was released; with 0.6 s per job the next one gets what is
    left, and the reason gives the measured time, above the bound (never "0.6 > 0.6")."""
    job, _ = await store.submit("metered", {"steps": 1, "sleep": 5}, requester="t")
    [claim] = await store.claim("w", limit=1, lease_seconds=30)
    await asyncio.sleep(0.4)
    await store.finish_one(Finish(job.id, claim.attempt_id, "released"))
    started = time.monotonic()
    async with running_worker(store, registry, db_dsn, tmp_path, budget=Budget(job_seconds=0.6)):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
    assert time.monotonic() - started < 2.0
    assert done.state.value == "failed"
    match = re.fullmatch(
        r"budget exceeded: seconds per job \(all attempts\) ([0-9.]+) > 0\.6", done.reason or ""
    )
    assert match, done.reason
    assert 0.6 < float(match[1]) < 1.5
    ran = await pool.fetchval(
        "SELECT sum(extract(epoch FROM ended_at - started_at)) FROM attempt WHERE job_id = $1",
        job.id,
    )
    assert float(ran) < 1.5


def test_a_budget_failure_never_prints_the_bound_as_the_usage() -> None:
    """A measured value that rounds to the bound gets more digits; it is above the bound."""
    assert str(BudgetExceeded("job_seconds", 0.3000004, 0.3)).endswith("0.3000004 > 0.3")
    assert (
        str(BudgetExceeded("step_tokens", 150, 100)) == "budget exceeded: tokens per step 150 > 100"
    )


async def test_a_lease_lost_in_a_database_restart_is_recorded_as_such_and_not_a_failure(
    data_root: Path, registry: Registry, tmp_path: Path
) -> None:
    """A worker (``errand worker``) runs three jobs of a kind that counts crashes; it freezes
    (SIGSTOP) and the database restarts, so its leases run out with the outage after its last
    heartbeat. Another worker's reaper records each attempt ``lease_lost`` (never
    ``abandoned``): no attempt used up, and every job succeeds on its next attempt. The frozen
    worker, resumed, writes nothing over them."""
    from jobs.engine.db import create_pool, embedded_dsn, stop_embedded
    from jobs.engine.migrate import migrate

    pgdata = data_root / "pgdata"
    dsn = await asyncio.to_thread(embedded_dsn, pgdata)
    own = await create_pool(dsn, max_size=4)
    async with own.acquire() as conn:
        await migrate(conn)
    own_store = JobStore(own, registry)
    jobs = [
        (await own_store.submit("crashy", {"seconds": 3.0}, requester="a"))[0] for _ in range(3)
    ]
    env = cli_environment(dsn, tmp_path / "data") | {
        "ERRAND_EXTRA_KINDS": "tests.support.kinds",
        # 3 s: a starved process must not see its own leases run out before it is frozen.
        "ERRAND_WORKER_LEASE_SECONDS": "3",
        "ERRAND_WORKER_HEARTBEAT_SECONDS": "0.2",
    }
    frozen = await asyncio.create_subprocess_exec(
        *CLI, "worker", env=env, cwd=ROOT, stdout=DEVNULL, stderr=DEVNULL
    )
    try:
        for job in jobs:
            await job_reaches(own_store, job.public_id, {"running"}, 20)
        frozen.send_signal(signal.SIGSTOP)
        await asyncio.to_thread(stop_embedded, pgdata)
        await start(pgdata)
        async with running_worker(
            own_store, registry, dsn, tmp_path, lease_seconds=1.0, retry_base_seconds=0.0
        ):
            done = [
                await job_reaches(own_store, j.public_id, {"succeeded", "failed", "unknown"}, 30)
                for j in jobs
            ]
            frozen.send_signal(signal.SIGCONT)
            await asyncio.sleep(1.0)  # its heartbeats find their attempts ended
        frozen.send_signal(signal.SIGTERM)
        await asyncio.wait_for(frozen.wait(), 20)
        outcomes = [await _outcomes(own, j.id) for j in jobs]
        after = [await own_store.get(j.public_id) for j in jobs]
    finally:
        if frozen.returncode is None:
            frozen.send_signal(signal.SIGCONT)
            frozen.kill()
            await frozen.wait()
        await own.close()
    assert [(d.state.value, d.failures) for d in done] == [("succeeded", 0)] * 3
    assert outcomes == [["lease_lost", "succeeded"]] * 3
    assert [(a.state.value, a.attempts, a.failures) for a in after] == [("succeeded", 2, 0)] * 3
