"""Kinds used only by the tests; a worker subprocess loads them with
``ERRAND_EXTRA_KINDS=tests.support.kinds``.

``effect_probe`` does one guarded effect: it appends its key to a file (the "outside world"),
then sleeps so a test can SIGKILL the worker between the intent and the outcome. With
``with_lookup`` the lookup reads that file to tell whether the effect happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from jobs.runtime.budget import Budget
from jobs.runtime.context import Context
from jobs.runtime.registry import kind


class EffectParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ledger: str
    with_lookup: bool = False
    hold_seconds: float = 0.0


@kind("effect_probe", params=EffectParams, retry_safe=True, max_attempts=3)
async def effect_probe(ctx: Context, params: EffectParams) -> dict[str, Any]:
    """Append to a ledger file once, guarded as an effect."""
    ledger = Path(params.ledger)

    def append() -> None:
        with ledger.open("a") as f:
            f.write(f"charge {ctx.public_id} attempt {ctx.attempt} pid {os.getpid()}\n")

    async def do() -> dict[str, Any]:
        await ctx.run_blocking(append)
        if ctx.attempt == 1:
            await asyncio.sleep(params.hold_seconds)  # the crash window, first attempt only
        return {"charged": True, "attempt": ctx.attempt}

    async def lookup(key: str) -> dict[str, Any] | None:
        text = await ctx.run_blocking(lambda: ledger.read_text() if ledger.exists() else "")
        return {"charged": True, "found_by": "lookup"} if ctx.public_id in text else None

    outcome = await ctx.effect("charge", do, lookup if params.with_lookup else None)
    return {"outcome": outcome}


class BusyParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = 1.0


def _spin(seconds: float) -> int:
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        n += 1
    return n


@kind("deadlined", params=BusyParams, deadline_seconds=3600.0)
async def deadlined(ctx: Context, params: BusyParams) -> None:
    """A job that must end within an hour of its submit (bulk submit's per-row columns)."""
    await asyncio.sleep(params.seconds)


@kind("busy", params=BusyParams)
async def busy(ctx: Context, params: BusyParams) -> dict[str, Any]:
    """CPU-heavy work done the right way: in a thread, off the event loop."""
    await ctx.run_blocking(_spin, params.seconds)
    return {"spun": params.seconds}


class StepParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: int = 1
    tokens: int = 0
    tool_calls: int = 0
    sleep: float = 0.0
    budget: Budget | None = None


@kind("metered", params=StepParams, budget=Budget(step_tool_calls=5))
async def metered(ctx: Context, params: StepParams) -> dict[str, Any]:
    """Steps that report tokens and tool calls, to exercise every bound."""
    ctx.limit(params.budget)
    for i in range(params.steps):
        async with ctx.step(f"s{i}") as meter:
            meter.tokens(params.tokens // 2, params.tokens - params.tokens // 2)
            meter.tool_calls(params.tool_calls)
            if params.sleep:
                await asyncio.sleep(params.sleep)
    return {"usage": ctx.usage.to_json() if ctx.usage else None}


@kind("crashy", params=BusyParams, retry_safe=True, max_attempts=3, count_crashes=True)
async def crashy(ctx: Context, params: BusyParams) -> dict[str, Any]:
    """A kind whose work could crash its worker: a crash uses up one of its attempts."""
    await ctx.sleep(params.seconds)
    return {}


class ResumeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: int = 3
    fail_once_at: int | None = None


@kind("resumer", params=ResumeParams, retry_safe=False, max_attempts=1)
async def resumer(ctx: Context, params: ResumeParams) -> dict[str, Any]:
    """Not retry-safe, but resumable: it checkpoints after each step, as a kind author would."""
    state = ctx.resume_state or {"done": 0, "seen": []}
    seen = [*state["seen"], ctx.attempt]
    for number in range(state["done"] + 1, params.steps + 1):
        async with ctx.step(f"part {number}"):
            await ctx.sleep(0.05)
        await ctx.checkpoint({"done": number, "seen": seen})
    return {"seen": seen}


class BlockingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    log: str
    seconds: float = 4.0


def _work_in_thread(log: Path, label: str, seconds: float) -> None:
    """Blocking work that records, from inside the thread, when it started and ended."""
    with log.open("a") as f:
        f.write(f"start {label} {time.time()}\n")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)
    with log.open("a") as f:
        f.write(f"end {label} {time.time()}\n")


@kind("blocking_probe", params=BlockingParams, retry_safe=True, max_attempts=3)
async def blocking_probe(ctx: Context, params: BlockingParams) -> dict[str, Any]:
    """Blocking work in a thread (run_blocking), logging its times for an overlap check."""
    await ctx.run_blocking(
        _work_in_thread, Path(params.log), f"{ctx.public_id}/{ctx.attempt}", params.seconds
    )
    ctx.checkpoint()
    return {"attempt": ctx.attempt}


class StuckParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    log: str
    stuck_attempts: int = 1


def _stuck_in_thread(log: Path, label: str) -> None:
    """Blocking work that never returns: from inside the thread, the time every 50 ms."""
    while True:
        _append(log, f"{label} {time.time()}\n")
        time.sleep(0.05)


async def _stuck_then_done(ctx: Context, params: StuckParams) -> dict[str, Any]:
    """Attempts up to ``stuck_attempts`` block in a thread for ever; later ones log once."""
    label = f"{ctx.public_id}/{ctx.attempt}"
    if ctx.attempt <= params.stuck_attempts:
        await ctx.run_blocking(_stuck_in_thread, Path(params.log), label)
    _append(Path(params.log), f"{label} {time.time()}\n")
    return {"attempt": ctx.attempt}


# Retry-safe: a shutdown releases it, and another worker runs it again.
kind("stuck_probe", params=StuckParams, retry_safe=True, max_attempts=3)(_stuck_then_done)
# Not retry-safe: a shutdown ends it ``unknown``, never to run again by itself.
kind("stuck_once", params=StuckParams)(_stuck_then_done)


class SwallowParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = 120.0


@kind("swallower", params=SwallowParams)
async def swallower(ctx: Context, params: SwallowParams) -> dict[str, Any]:
    """A badly written handler: it swallows cancellation and never checks for a stop."""
    end = time.monotonic() + params.seconds
    while time.monotonic() < end:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0.1)
    return {}


class OneShotParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    log: str
    seconds: float = 3.0


def _append(path: Path, line: str) -> None:
    with path.open("a") as f:
        f.write(line)


@kind("one_shot", params=OneShotParams)
async def one_shot(ctx: Context, params: OneShotParams) -> dict[str, Any]:
    """Not retry-safe (one attempt): records each attempt it starts, then works in steps."""
    await ctx.run_blocking(_append, Path(params.log), f"{ctx.public_id} {ctx.attempt}\n")
    for i in range(int(params.seconds * 10)):
        async with ctx.step(f"s{i}"):
            await ctx.sleep(0.1)
    return {"attempt": ctx.attempt}


class LedgerParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ledger: str
    seconds: float = 600.0


def _note(ledger: str, line: str) -> None:
    with Path(ledger).open("a") as f:
        f.write(line + "\n")


@kind("plain_sleep", params=LedgerParams)
async def plain_sleep(ctx: Context, params: LedgerParams) -> dict[str, Any]:
    """Await plain asyncio.sleep (no checkpoint, no ctx API); note what it saw in the ledger."""
    _note(params.ledger, "started")
    try:
        await asyncio.sleep(params.seconds)
    except asyncio.CancelledError:
        _note(params.ledger, "saw CancelledError")
        raise
    _note(params.ledger, "slept")
    return {}


@kind("effect_hold", params=LedgerParams)
async def effect_hold(ctx: Context, params: LedgerParams) -> dict[str, Any]:
    """A guarded effect that takes ``seconds`` (plain asyncio.sleep), then more work after it."""

    async def do() -> dict[str, Any]:
        _note(params.ledger, "effect started")
        await asyncio.sleep(params.seconds)
        _note(params.ledger, "effect done")
        return {"done": True}

    outcome = await ctx.effect("hold", do)
    _note(params.ledger, "after the effect")
    await asyncio.sleep(params.seconds)
    return {"outcome": outcome}
