"""The ``demo`` kind: the default for trying Errand. N steps of S seconds with progress, and on
request a failure at step K or flakiness, to show budgets, failures and retries, or an outside
action that cannot be looked up, to show ``unknown``.

It checkpoints after every step, so an attempt that follows a shutdown, a crash or a flaky
failure resumes at the next step instead of starting again. The outside action
(``effect_seconds``) is a guarded effect without a lookup: a worker stopped (Ctrl-C) or killed
while it runs leaves its outcome in doubt, and the job ends ``unknown`` for a person to resolve
(docs/sandbox.md, "Make an unknown job").
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from jobs.errors import JobFailed
from jobs.runtime.context import Context
from jobs.runtime.registry import kind


class DemoParams(BaseModel):
    """Parameters of ``demo``."""

    model_config = ConfigDict(extra="forbid")

    steps: int = Field(default=5, ge=0, le=10_000, description="How many steps")
    step_seconds: float = Field(default=1.0, ge=0, le=3600, description="Seconds per step")
    fail_at_step: int | None = Field(default=None, ge=1, description="Fail (no retry) at step K")
    flaky: float = Field(default=0.0, ge=0, le=1, description="Chance a step fails (retried)")
    effect_seconds: float = Field(
        default=0,
        ge=0,
        le=3600,
        description="Then an outside action of N s that cannot be looked up (stop it: unknown)",
    )


@kind("demo", params=DemoParams, retry_safe=True, max_attempts=3)
async def demo(ctx: Context, params: DemoParams) -> dict[str, Any]:
    """Take a few steps, reporting progress; optionally fail or be flaky."""
    done = int((ctx.resume_state or {}).get("done", 0))
    if done:
        await ctx.progress(done, params.steps, f"resuming after step {done}")
    for number in range(done + 1, params.steps + 1):
        async with ctx.step(f"step {number}"):
            if params.step_seconds:
                await ctx.sleep(params.step_seconds)
            else:
                ctx.checkpoint()
            if params.fail_at_step == number:
                raise JobFailed(f"failed at step {number} as asked (fail_at_step)")
            if params.flaky and random.random() < params.flaky:
                raise RuntimeError(f"flaky failure at step {number} (attempt {ctx.attempt})")
        await ctx.progress(number, params.steps, "counting" if number < params.steps else "done")
        # Saved once the step ended: the next attempt starts at step number + 1.
        await ctx.checkpoint({"done": number})
    if not params.effect_seconds:
        return {"steps": params.steps, "attempt": ctx.attempt}

    async def send() -> dict[str, Any]:
        # Deaf to a stop on purpose, like a payment on its way: only the process's end cuts it.
        await asyncio.sleep(params.effect_seconds)
        return {"sent": True}

    await ctx.progress(params.steps, params.steps, "sending (an outside action, no lookup)")
    sent: dict[str, Any] = await ctx.effect("send", send)  # no lookup: unknown if cut off
    return {"steps": params.steps, "attempt": ctx.attempt} | sent
