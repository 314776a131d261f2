"""The worker runtime end to end on real PostgreSQL: demo, steps, budgets, quotas, cancel."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncpg
import pytest

import tests.kinds_for_tests  # noqa: F401  (registers the test kinds)
from jobs.engine.state import Actor
from jobs.engine.store import JobStore, Quotas
from jobs.errors import InvalidParams, QuotaExceeded
from jobs.runtime.budget import Budget
from jobs.runtime.registry import Registry
from tests.integration.runtime_support import running_worker, wait_for


async def test_demo_runs_its_steps_to_succeeded_with_progress_and_usage(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """demo with 3 short steps succeeds; each step is recorded ok; progress and usage say 3."""
    job, _ = await store.submit("demo", {"steps": 3, "step_seconds": 0.05}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await wait_for(store, job.public_id, {"succeeded", "failed"})
    assert done.state.value == "succeeded"
    assert done.result == {"steps": 3, "attempt": 1}
    assert {k: done.progress[k] for k in ("done", "total")} == {"done": 3, "total": 3}
    steps = await pool.fetch(
        "SELECT name, outcome, ended_at FROM step WHERE job_id = $1 ORDER BY number", done.id
    )
    expected = [("step 1", "ok"), ("step 2", "ok"), ("step 3", "ok")]
    assert [(s["name"], s["outcome"]) for s in steps] == expected
    assert done.usage["steps"] == 3


async def test_demo_fail_at_step_fails_once_without_retry(
    store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    """fail_at_step=2 ends failed at step 2 on the first attempt (no retry of a chosen failure)."""
    job, _ = await store.submit(
        "demo", {"steps": 4, "step_seconds": 0, "fail_at_step": 2}, requester="t"
    )
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await wait_for(store, job.public_id, {"succeeded", "failed"})
    assert (done.state.value, done.attempts) == ("failed", 1)
    assert done.reason == "failed at step 2 as asked (fail_at_step)"


async def test_demo_flaky_is_retried_until_attempts_run_out(
    store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    """flaky=1 fails every attempt; the retry-safe kind is retried up to max_attempts."""
    job, _ = await store.submit(
        "demo", {"steps": 1, "step_seconds": 0, "flaky": 1.0}, requester="t"
    )
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await wait_for(store, job.public_id, {"succeeded", "failed"}, within=20)
    assert (done.state.value, done.attempts) == ("failed", 3)
    assert "flaky failure at step 1 (attempt 3)" in (done.reason or "")


async def test_bad_params_are_refused_at_submit_and_create_nothing(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Params are validated by the kind's model at submit time."""
    with pytest.raises(InvalidParams, match="steps"):
        await store.submit("demo", {"steps": -1}, requester="t")
    with pytest.raises(InvalidParams, match="step_tool_calls"):
        await store.submit("metered", {"budget": {"step_tool_calls": "many"}}, requester="t")
    assert await pool.fetchval("SELECT count(*) FROM job") == 0


BOUNDS = [
    # (params, global budget, expected reason)
    ({"tokens": 30}, Budget(step_tokens=20), "budget exceeded: tokens per step 30 > 20"),
    (
        {"tool_calls": 2, "budget": {"step_tool_calls": 1}},
        Budget(),
        "budget exceeded: tool_calls per step 2 > 1",
    ),
    ({"sleep": 5}, Budget(step_seconds=0.2), "budget exceeded: seconds per step"),
    ({"steps": 4}, Budget(job_steps=3), "budget exceeded: steps per job 4 > 3"),
    ({"steps": 3, "tokens": 10}, Budget(job_tokens=25), "budget exceeded: tokens per job 30 > 25"),
    ({"steps": 1, "sleep": 5}, Budget(job_seconds=0.3), "budget exceeded: seconds per job"),
    # The kind's default (5 tool calls per step) holds even when the job asks for more.
    (
        {"tool_calls": 6, "budget": {"step_tool_calls": 100}},
        Budget(),
        "budget exceeded: tool_calls per step 6 > 5",
    ),
]


@pytest.mark.parametrize(("params", "budget", "reason"), BOUNDS)
async def test_each_bound_exceeded_fails_the_job_naming_the_bound_and_usage(
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    pool: asyncpg.Pool,
    tmp_path: Path,
    params: dict[str, object],
    budget: Budget,
    reason: str,
) -> None:
    """Exceeding any bound raises inside the step; the job ends failed (no retry) saying why."""
    job, _ = await store.submit("metered", params, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path, budget=budget):
        done = await wait_for(store, job.public_id, {"succeeded", "failed"})
    assert done.state.value == "failed"
    assert (done.reason or "").startswith(reason)
    assert done.error["type"] == "BudgetExceeded"
    if "per job" not in reason or "steps" not in reason:
        outcomes = await pool.fetch("SELECT outcome FROM step WHERE job_id = $1", done.id)
        assert outcomes[-1]["outcome"] == "budget_exceeded" or "seconds per job" in reason


async def test_usage_is_stored_on_the_job_and_its_steps(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """Usage of every step adds up on the job record."""
    job, _ = await store.submit(
        "metered", {"steps": 2, "tokens": 7, "tool_calls": 1}, requester="t"
    )
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await wait_for(store, job.public_id, {"succeeded", "failed"})
    assert done.state.value == "succeeded"
    assert (done.usage["tokens"], done.usage["tool_calls"], done.usage["steps"]) == (14, 2, 2)
    rows = await pool.fetch("SELECT usage FROM step WHERE job_id = $1", done.id)
    assert [r["usage"]["tokens"] for r in rows] == [7, 7]


async def test_quota_per_requester_refuses_and_creates_nothing(
    pool: asyncpg.Pool, registry: Registry
) -> None:
    """The requester's third active job is refused with a clear message; nothing is created."""
    store = JobStore(pool, registry, quotas=Quotas(per_requester=2))
    for _ in range(2):
        await store.submit("sleep", {"seconds": 60}, requester="ann")
    with pytest.raises(QuotaExceeded, match="quota reached: 2 of 2 active jobs for you"):
        await store.submit("sleep", {"seconds": 60}, requester="ann")
    await store.submit("sleep", {"seconds": 60}, requester="bob")  # others are not affected
    assert await pool.fetchval("SELECT count(*) FROM job") == 3


async def test_quota_per_group_holds_under_a_concurrent_burst(
    pool: asyncpg.Pool, registry: Registry
) -> None:
    """30 concurrent submits into a guild with a quota of 5 create exactly 5 jobs."""
    store = JobStore(pool, registry, quotas=Quotas(per_group=5))

    async def one(i: int) -> str:
        try:
            await store.submit("sleep", {"seconds": 60}, requester=f"u{i}", origin_group="g1")
        except QuotaExceeded as exc:
            return str(exc)
        return "created"

    outcomes = await asyncio.gather(*(one(i) for i in range(30)))
    assert outcomes.count("created") == 5
    assert {"quota reached: 5 of 5 active jobs here; wait for one to finish"} == (
        set(outcomes) - {"created"}
    )
    assert await pool.fetchval("SELECT count(*) FROM job WHERE origin_group = 'g1'") == 5


async def test_quotas_come_from_settings(monkeypatch: pytest.MonkeyPatch, db_dsn: str) -> None:
    """ERRAND_QUOTA_PER_REQUESTER reaches the engine's store."""
    from jobs.ops.app import open_engine
    from jobs.settings import Settings

    monkeypatch.setenv("DATABASE_URL", db_dsn)
    monkeypatch.setenv("ERRAND_QUOTA_PER_REQUESTER", "1")
    async with open_engine(Settings(), pool_max=2) as engine:
        await engine.store.submit("sleep", {"seconds": 60}, requester="ann")
        with pytest.raises(QuotaExceeded):
            await engine.store.submit("sleep", {"seconds": 60}, requester="ann")


async def test_cancel_during_a_step_stops_at_once_and_records_the_step(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A cancel wakes a sleeping step; the job ends cancelled; no new step starts."""
    job, _ = await store.submit("demo", {"steps": 3, "step_seconds": 30}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        await wait_for(store, job.public_id, {"running"})
        await asyncio.sleep(0.2)
        started = time.monotonic()
        await store.cancel(job.public_id, actor=Actor.REQUESTER, by="t")
        done = await wait_for(store, job.public_id, {"cancelled", "succeeded", "failed"})
        took = time.monotonic() - started
    assert done.state.value == "cancelled"
    assert took < 2.0
    steps = await pool.fetch("SELECT outcome FROM step WHERE job_id = $1", done.id)
    assert [s["outcome"] for s in steps] == ["cancelled"]


async def test_a_blocking_kind_in_a_thread_does_not_delay_other_heartbeats(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """While busy spins the CPU for 2 s via run_blocking, the loop stays responsive and the
    other job's lease keeps being renewed."""
    busy, _ = await store.submit("busy", {"seconds": 2.0}, requester="t")
    sleeper, _ = await store.submit("sleep", {"seconds": 30}, requester="t")
    gaps: list[float] = []
    async with running_worker(store, registry, db_dsn, tmp_path):
        await wait_for(store, busy.public_id, {"running"})
        await wait_for(store, sleeper.public_id, {"running"})
        first = await pool.fetchval(
            "SELECT heartbeat_at FROM attempt WHERE job_id = $1", sleeper.id
        )
        last = time.monotonic()
        while (await store.get(busy.public_id)).state.value == "running":
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now
        later = await pool.fetchval(
            "SELECT heartbeat_at FROM attempt WHERE job_id = $1", sleeper.id
        )
        await store.cancel(sleeper.public_id, actor=Actor.REQUESTER, by="t")
    assert (await store.get(busy.public_id)).state.value == "succeeded"
    assert max(gaps) < 0.5
    assert (later - first).total_seconds() >= 1.0


@pytest.mark.slow
async def test_one_thousand_concurrent_demo_jobs_in_one_worker(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """1,000 demo jobs run at once in one worker and all succeed."""
    jobs = await asyncio.gather(
        *(
            store.submit("demo", {"steps": 2, "step_seconds": 1}, requester=f"u{i % 50}")
            for i in range(1000)
        )
    )
    ids = {j.id for j, _ in jobs}
    started = time.monotonic()
    async with running_worker(
        store,
        registry,
        db_dsn,
        tmp_path,
        concurrency=1000,
        claim_batch=500,
        lease_seconds=30.0,
        heartbeat_seconds=2.0,
    ):
        peak = 0
        while True:
            counts = dict(await pool.fetch("SELECT state::text, count(*) FROM job GROUP BY state"))
            peak = max(peak, counts.get("running", 0))
            if counts.get("succeeded", 0) + counts.get("failed", 0) == 1000:
                break
            assert time.monotonic() - started < 60
            await asyncio.sleep(0.1)
    assert dict(await pool.fetch("SELECT state::text, count(*) FROM job GROUP BY state")) == {
        "succeeded": 1000
    }
    assert peak >= 500  # they really ran concurrently (each takes >= 2 s)
    assert (
        await pool.fetchval("SELECT count(*) FROM step WHERE job_id = ANY($1)", list(ids)) == 2000
    )
