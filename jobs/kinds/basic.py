"""Errand's built-in kinds: ``noop`` (benchmarks) and ``sleep`` (operators, cancellation tests)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from jobs.runtime.context import Context
from jobs.runtime.registry import kind


class NoParams(BaseModel):
    """No parameters."""

    model_config = ConfigDict(extra="forbid")


class SleepParams(BaseModel):
    """Parameters of ``sleep``."""

    model_config = ConfigDict(extra="forbid")
    seconds: float = Field(default=1.0, ge=0, le=7 * 24 * 3600, description="How long to sleep")


@kind("noop", params=NoParams, retry_safe=True, max_attempts=3)
async def noop(ctx: Context, params: NoParams) -> dict[str, Any]:
    """Do nothing and succeed at once."""
    return {}


# Progress is reported about this often (at most 100 times in all), so a long sleep does not
# look frozen.
SLEEP_PROGRESS_SECONDS = 1.0


@kind("sleep", params=SleepParams, retry_safe=True, max_attempts=3)
async def sleep(ctx: Context, params: SleepParams) -> dict[str, Any]:
    """Sleep for some seconds, stopping as soon as a cancel is requested."""
    total = params.seconds
    tick = max(SLEEP_PROGRESS_SECONDS, total / 100)
    slept = 0.0
    while slept < total:
        step = min(tick, total - slept)
        await ctx.sleep(step)
        slept += step
        await ctx.progress(round(slept, 3), total, f"{slept:.0f} of {total:g} s")
    return {"slept": params.seconds}
