"""Engine defects found in review, each pinned by the scenario that exposed it (real PostgreSQL)."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from pydantic import BaseModel, ConfigDict

from jobs.engine.model import Claim
from jobs.engine.store import Finish, JobStore
from jobs.errors import LeaseLost
from jobs.kinds.command import CommandSpec, run_command
from jobs.runtime.asset import INLINE_LIMIT, read_asset
from jobs.runtime.budget import Budget
from jobs.runtime.context import Context
from jobs.runtime.registry import Kind, Registry
from jobs.secrets import scrub
from tests.integration.runtime_support import running_worker, wait_for


class _NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _registry(**handlers: Any) -> Registry:
    reg = Registry()
    for name, handler in handlers.items():
        reg.add(Kind(name=name, handler=handler, params=_NoParams, description=name))
    return reg


async def _noop(ctx: Context, params: _NoParams) -> dict[str, Any]:
    return {"ok": True}


async def test_unstorable_result_fails_its_job_without_losing_other_outcomes(
    pool: asyncpg.Pool, db_dsn: str, tmp_path: Path
) -> None:
    """A result PostgreSQL cannot store (a NUL in text) fails that job; the worker lives on."""

    async def nul(ctx: Context, params: _NoParams) -> dict[str, Any]:
        return {"tail": "a\x00b"}

    reg = _registry(nul=nul, noop=_noop)
    store = JobStore(pool, reg)
    bad, _ = await store.submit("nul", {}, requester="t")
    good, _ = await store.submit("noop", {}, requester="t")
    async with running_worker(store, reg, db_dsn, tmp_path):
        assert (await wait_for(store, bad.public_id, {"succeeded", "failed"})).state == "failed"
        assert (await wait_for(store, good.public_id, {"succeeded"})).state == "succeeded"
        later, _ = await store.submit("noop", {}, requester="t")
        assert (await wait_for(store, later.public_id, {"succeeded"})).state == "succeeded"


async def test_attempt_that_ends_without_a_recorded_end_does_not_keep_its_lease(
    pool: asyncpg.Pool, db_dsn: str, tmp_path: Path
) -> None:
    """A handler cancelled from inside (no stop asked) must not leave a lease renewed forever."""

    async def self_cancel(ctx: Context, params: _NoParams) -> dict[str, Any]:
        raise asyncio.CancelledError

    reg = _registry(self_cancel=self_cancel)
    store = JobStore(pool, reg)
    job, _ = await store.submit("self_cancel", {}, requester="t")
    async with running_worker(store, reg, db_dsn, tmp_path, lease_seconds=1.0):
        done = await wait_for(
            store, job.public_id, {"succeeded", "failed", "cancelled", "unknown"}, within=10
        )
    assert (done.state, done.reason) == ("failed", "lease expired; no attempts left")


async def _two_steps_at_once(ctx: Context, params: _NoParams) -> dict[str, Any]:
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
    reg = _registry(pair=_two_steps_at_once)
    store = JobStore(pool, reg)
    job, _ = await store.submit("pair", {}, requester="t")
    async with running_worker(store, reg, db_dsn, tmp_path, budget=budget):
        done = await wait_for(store, job.public_id, {"succeeded", "failed"})
    assert (done.state, bound in (done.reason or "")) == ("failed", True)


async def _claim_ctx(store: JobStore, worker: str, assets: Path) -> Context:
    [claim] = await store.claim(worker, limit=1, lease_seconds=30)
    return _ctx(store, claim, assets)


def _ctx(store: JobStore, claim: Claim, assets: Path) -> Context:
    return Context(
        store=store,
        job_id=claim.job_id,
        public_id=claim.public_id,
        attempt_id=claim.attempt_id,
        attempt=claim.attempt,
        kind=claim.kind,
        assets_dir=assets,
    )


async def test_stale_attempt_cannot_overwrite_or_remove_a_large_asset_of_the_current_one(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A large asset written by an attempt that lost its lease leaves the current file alone."""
    reg = Registry()
    reg.add(
        Kind(
            name="retry",
            handler=_noop,
            params=_NoParams,
            description="retry",
            retry_safe=True,
            max_attempts=3,
        )
    )
    store = JobStore(pool, reg)
    await store.submit("retry", {}, requester="t")
    stale = await _claim_ctx(store, "w1", tmp_path)
    await pool.execute("UPDATE attempt SET lease_expires_at = now() - interval '1 s'")
    await store.reap(cancel_grace_seconds=60, retry_base=0, retry_cap=0)
    current = await _claim_ctx(store, "w2", tmp_path)
    assert stale.job_id == current.job_id
    fresh = b"B" * (INLINE_LIMIT + 1)
    await current.asset("command.log", fresh)
    with pytest.raises(LeaseLost):
        await stale.asset("command.log", b"A" * (INLINE_LIMIT + 1))
    assert fresh == await read_asset(pool, current.job_id, "command.log")


async def test_command_output_with_a_nul_byte_does_not_break_the_command(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A NUL byte in a command's output (progress note, tail) is not a failure of the command."""
    store = JobStore(pool, _registry(noop=_noop))
    await store.submit("noop", {}, requester="t")
    ctx = await _claim_ctx(store, "w1", tmp_path)
    spec = CommandSpec(name="nul", argv=["printf", "a\\000b\\n"])
    result = await run_command(ctx, spec, {}, log_asset="command.log", progress=True)
    await ctx.flush()
    assert (result["exit_code"], result["tail"]) == (0, ["a\ufffdb"])


def test_negative_number_cannot_pass_as_an_option() -> None:
    """A number parameter starting with '-' is refused like text, unless allow_dash is set."""
    spec = CommandSpec.model_validate(
        {"name": "head", "argv": ["head", "{n}"], "params": {"n": {"type": "integer"}}}
    )
    with pytest.raises(ValueError, match="must not start with '-'"):
        spec.argv_for({"n": -5})
    spec = CommandSpec.model_validate(
        {
            "name": "head",
            "argv": ["head", "-n", "{n}"],
            "params": {"n": {"type": "integer", "allow_dash": True}},
        }
    )
    assert spec.argv_for({"n": -5}) == ["head", "-n", "-5"]


async def test_command_output_line_longer_than_the_stream_limit_is_not_a_failure(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A 100 kB line without a break (minified JSON) is output like any other, not an error."""
    store = JobStore(pool, _registry(noop=_noop))
    await store.submit("noop", {}, requester="t")
    ctx = await _claim_ctx(store, "w1", tmp_path)
    spec = CommandSpec(name="wide", argv=[sys.executable, "-c", "print('x' * 100_000)"])
    result = await run_command(ctx, spec, {}, log_asset="command.log", progress=True)
    await ctx.flush()
    log = await read_asset(pool, ctx.job_id, "command.log")
    assert (result["exit_code"], result["lines"], len(log)) == (0, 1, 100_001)


async def test_batched_finish_locks_its_jobs_in_id_order(pool: asyncpg.Pool) -> None:
    """A finish batch with outcomes of several kinds never deadlocks with a writer that locks
    the same jobs in id order (as every transition does)."""
    store = JobStore(pool, _registry(noop=_noop))
    for _ in range(2):
        await store.submit("noop", {}, requester="t")
    low, high = sorted(await store.claim("w1", limit=2, lease_seconds=30), key=lambda c: c.job_id)
    async with pool.acquire() as other:
        tx = other.transaction()
        await tx.start()
        await other.execute("SELECT 1 FROM job WHERE id = $1 FOR UPDATE", low.job_id)
        batch = asyncio.ensure_future(
            store.finish(
                [
                    Finish(high.job_id, high.attempt_id, "succeeded", result={}),
                    Finish(low.job_id, low.attempt_id, "failed", reason="x"),
                ]
            )
        )
        await asyncio.sleep(0.3)  # the batch now waits for the low job
        await other.execute("SELECT 1 FROM job WHERE id = $1 FOR UPDATE", high.job_id)
        await tx.commit()
        moved = await asyncio.wait_for(batch, 10)
    assert sorted(m.target for m in moved if m.target) == ["failed", "succeeded"]


def test_scrub_is_linear_on_a_long_word_and_redacts_a_password_without_user() -> None:
    """scrub runs on the event loop for every output line: 100 kB of one word takes no time;
    ``redis://:pw@host`` loses its password too."""
    started = time.perf_counter()
    assert scrub("x" * 100_000) == "x" * 100_000
    assert time.perf_counter() - started < 0.5
    assert scrub("redis://:pw@cache:6379/0") == "redis://:***@cache:6379/0"
    assert scrub("postgresql://errand:s3cret@db/x") == "postgresql://errand:***@db/x"


async def test_command_that_ran_is_not_run_again_when_its_log_cannot_be_stored(
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A non-retry-safe command runs as a guarded effect: once it ran, failing to keep its log
    (a full disk, an unwritable assets dir) must not mark the effect failed and run it again."""
    ledger = tmp_path / "ledger"
    catalog = tmp_path / "commands.toml"
    catalog.write_text(
        "[commands.charge]\n"
        f'argv = ["sh", "-c", "echo charged >> {ledger}; head -c 300000 /dev/zero"]\n'
    )
    monkeypatch.setenv("ERRAND_COMMAND_CATALOG", str(catalog))
    not_a_dir = tmp_path / "assets"
    not_a_dir.write_text("a file where the assets directory should be")
    job, _ = await store.submit("command", {"name": "charge"}, requester="t")
    async with running_worker(store, registry, db_dsn, not_a_dir, retry_base_seconds=0):
        done = await wait_for(store, job.public_id, {"succeeded", "failed", "unknown"})
    assert (done.state, ledger.read_text()) == ("succeeded", "charged\n")


async def test_same_effect_key_awaited_twice_at_once_runs_once(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """ctx.effect is at most once per job and key, also for two calls running concurrently."""
    store = JobStore(pool, _registry(noop=_noop))
    await store.submit("noop", {}, requester="t")
    ctx = await _claim_ctx(store, "w1", tmp_path)
    calls: list[int] = []

    async def do() -> dict[str, int]:
        calls.append(1)
        await asyncio.sleep(0.1)
        return {"n": len(calls)}

    outcomes = await asyncio.gather(ctx.effect("charge", do), ctx.effect("charge", do))
    assert (len(calls), outcomes) == (1, [{"n": 1}, {"n": 1}])
