"""Kinds used only by the tests; a worker subprocess loads them with
``ERRAND_EXTRA_KINDS=tests.kinds_for_tests``.

``effect_probe`` does one guarded effect: it appends its key to a file (the "outside world"),
then sleeps so a test can SIGKILL the worker between the intent and the outcome. With
``with_lookup`` the lookup reads that file to tell whether the effect happened.
"""

from __future__ import annotations

import asyncio
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
