"""The worker runtime end to end on real PostgreSQL: demo, steps, budgets, quotas, cancel."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import asyncpg
import pytest

import tests.support.kinds  # noqa: F401  (registers the test kinds)
from jobs.engine.state import Actor
from jobs.engine.store import JobStore, Quotas
from jobs.errors import InvalidParams, LeaseLost, QuotaExceeded
from jobs.runtime.asset import INLINE_LIMIT, read_asset
from jobs.runtime.budget import Budget
from jobs.runtime.context import Context
from jobs.runtime.registry import Kind, Registry
from tests.support.runtime import (
    NoParams,
    claim_context,
    job_reaches,
    noop,
    registry_of,
    running_worker,
)


async def test_demo_runs_its_steps_to_succeeded_with_progress_and_usage(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """demo with 3 short steps succeeds; each step is recorded ok; progress and usage say 3."""
    job, _ = await store.submit("demo", {"steps": 3, "step_seconds": 0.05}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
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
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
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
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"}, within=20)
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
    # 1 s, not less: the bound runs from the handler's start, and the step must have opened.
    ({"steps": 1, "sleep": 5}, Budget(job_seconds=1.0), "budget exceeded: seconds per job"),
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
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
    assert done.state.value == "failed"
    assert (done.reason or "").startswith(reason)
    assert done.error["type"] == "BudgetExceeded"
    assert (done.attempts, done.failures) == (1, 1)  # a failure: it used up one of max_attempts
    if "steps per job" not in reason:  # that bound refuses a step before it starts
        outcomes = await pool.fetch(
            "SELECT outcome FROM step WHERE job_id = $1 ORDER BY number", done.id
        )
        assert outcomes[-1]["outcome"] == "budget_exceeded"


async def test_usage_is_stored_on_the_job_and_its_steps(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """Usage of every step adds up on the job record."""
    job, _ = await store.submit(
        "metered", {"steps": 2, "tokens": 7, "tool_calls": 1}, requester="t"
    )
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
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
        await job_reaches(store, job.public_id, {"running"})
        await asyncio.sleep(0.2)
        started = time.monotonic()
        await store.cancel(job.public_id, actor=Actor.REQUESTER, by="t")
        done = await job_reaches(store, job.public_id, {"cancelled", "succeeded", "failed"})
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
        await job_reaches(store, busy.public_id, {"running"})
        await job_reaches(store, sleeper.public_id, {"running"})
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


async def test_a_worker_with_every_slot_busy_waits_without_burning_cpu(
    pool: asyncpg.Pool, db_dsn: str, tmp_path: Path
) -> None:
    """With every slot busy, wake-ups (a job's NOTIFY) wait for a free slot instead of
    spinning the claim loop; the queued job then runs as soon as the slot frees."""
    release = asyncio.Event()

    async def hold(ctx: Context, params: NoParams) -> dict[str, Any]:
        await release.wait()
        return {}

    reg = registry_of(hold=hold, noop=noop)
    store = JobStore(pool, reg)
    held, _ = await store.submit("hold", {}, requester="t")
    async with running_worker(store, reg, db_dsn, tmp_path, concurrency=1):
        await job_reaches(store, held.public_id, {"running"})
        waiting, _ = await store.submit("noop", {}, requester="t")  # its NOTIFY wakes the worker
        await asyncio.sleep(0.2)
        cpu, wall = time.process_time(), time.monotonic()
        await asyncio.sleep(1.0)
        share = (time.process_time() - cpu) / (time.monotonic() - wall)
        # Spinning shows as ~1.0 (one core); heartbeats, reaper and polls cost a few percent.
        assert share < 0.3, f"the worker's process used {share:.0%} of a core while waiting"
        assert (await store.get(waiting.public_id)).state == "queued"
        release.set()
        assert (await job_reaches(store, held.public_id, {"succeeded"})).state == "succeeded"
        assert (await job_reaches(store, waiting.public_id, {"succeeded"})).state == "succeeded"


async def test_unstorable_result_fails_its_job_without_losing_other_outcomes(
    pool: asyncpg.Pool, db_dsn: str, tmp_path: Path
) -> None:
    """A result PostgreSQL cannot store (a NUL in text) fails that job; the worker lives on."""

    async def nul(ctx: Context, params: NoParams) -> dict[str, Any]:
        return {"tail": "a\x00b"}

    reg = registry_of(nul=nul, noop=noop)
    store = JobStore(pool, reg)
    bad, _ = await store.submit("nul", {}, requester="t")
    good, _ = await store.submit("noop", {}, requester="t")
    async with running_worker(store, reg, db_dsn, tmp_path):
        assert (await job_reaches(store, bad.public_id, {"succeeded", "failed"})).state == "failed"
        assert (await job_reaches(store, good.public_id, {"succeeded"})).state == "succeeded"
        later, _ = await store.submit("noop", {}, requester="t")
        assert (await job_reaches(store, later.public_id, {"succeeded"})).state == "succeeded"


async def _two_steps_at_once(ctx: Context, params: NoParams) -> dict[str, Any]:
    async def one(name: str) -> None:
        async with ctx.step(name) as meter:
            await asyncio.sleep(0.05)
            meter.tokens(total=80)
            await asyncio.sleep(0.05)

    await asyncio.gather(one("a"), one("b"))
    return {"usage": ctx.usage.to_json() if ctx.usage else None}


@pytest.mark.parametrize(
    ("budget", "bound"),
    [(Budget(job_steps=1), "steps per job"), (Budget(job_tokens=100), "tokens per job")],
)
async def test_concurrent_steps_cannot_escape_a_job_bound(
    pool: asyncpg.Pool, db_dsn: str, tmp_path: Path, budget: Budget, bound: str
) -> None:
    """Two steps run with asyncio.gather share the job's bounds: 2 steps > 1, 160 tokens > 100."""
    reg = registry_of(pair=_two_steps_at_once)
    store = JobStore(pool, reg)
    job, _ = await store.submit("pair", {}, requester="t")
    async with running_worker(store, reg, db_dsn, tmp_path, budget=budget):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
    assert (done.state, bound in (done.reason or "")) == ("failed", True)


async def test_stale_attempt_cannot_overwrite_or_remove_a_large_asset_of_the_current_one(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A large asset written by an attempt that lost its lease leaves the current file alone."""
    reg = Registry()
    reg.add(
        Kind(
            name="retry",
            handler=noop,
            params=NoParams,
            description="retry",
            retry_safe=True,
            max_attempts=3,
        )
    )
    store = JobStore(pool, reg)
    await store.submit("retry", {}, requester="t")
    stale = await claim_context(store, "w1", tmp_path)
    await pool.execute("UPDATE attempt SET lease_expires_at = now() - interval '1 s'")
    await store.reap(cancel_grace_seconds=60, retry_base=0, retry_cap=0)
    current = await claim_context(store, "w2", tmp_path)
    assert stale.job_id == current.job_id
    fresh = b"B" * (INLINE_LIMIT + 1)
    await current.asset("command.log", fresh)
    with pytest.raises(LeaseLost):
        await stale.asset("command.log", b"A" * (INLINE_LIMIT + 1))
    assert fresh == await read_asset(pool, current.job_id, "command.log")


async def test_same_effect_key_awaited_twice_at_once_runs_once(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """ctx.effect is at most once per job and key, also for two calls running concurrently."""
    store = JobStore(pool, registry_of(noop=noop))
    await store.submit("noop", {}, requester="t")
    ctx = await claim_context(store, "w1", tmp_path)
    calls: list[int] = []

    async def do() -> dict[str, int]:
        calls.append(1)
        await asyncio.sleep(0.1)
        return {"n": len(calls)}

    outcomes = await asyncio.gather(ctx.effect("charge", do), ctx.effect("charge", do))
    assert (len(calls), outcomes) == (1, [{"n": 1}, {"n": 1}])
