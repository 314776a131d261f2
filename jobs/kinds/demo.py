"""The ``demo`` kind: the default for trying Errand. N steps of S seconds with progress, and on
request a failure at step K or flakiness, to show budgets, failures and retries, a question
before a step (``ask``), to show a job that talks back without a model, or an outside action that
cannot be looked up, to show ``unknown``.

It checkpoints after every step (and once the question is answered), so an attempt that follows
a shutdown, a crash, a flaky failure or a park resumes at the next step instead of starting
again, and never asks twice. The outside action (``effect_seconds``) is a guarded effect without
a lookup: a worker stopped (Ctrl-C) or killed while it runs leaves its outcome in doubt, and the
job ends ``unknown`` for a person to resolve (docs/sandbox.md, "Make an unknown job").
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from jobs.engine.mail import MAX_CHOICE, MAX_CHOICES, MAX_QUESTION
from jobs.errors import JobFailed
from jobs.runtime.context import Context
from jobs.runtime.registry import kind

QUESTION_KEY = "ask"
"""The key of the demo's one question."""


class DemoParams(BaseModel):
    """Parameters of ``demo``."""

    model_config = ConfigDict(extra="forbid")

    steps: int = Field(default=5, ge=0, le=10_000, description="How many steps")
    step_seconds: float = Field(default=1.0, ge=0, le=3600, description="Seconds per step")
    fail_at_step: int | None = Field(default=None, ge=1, description="Fail (no retry) at step K")
    flaky: float = Field(default=0.0, ge=0, le=1, description="Chance a step fails (retried)")
    ask: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_QUESTION,
        description="Ask the requester this before step ask_at_step",
    )
    ask_at_step: int = Field(default=1, ge=1, description="The step the question comes before")
    choices: list[str] | None = Field(
        default=None, description="The answers to offer (a list, or words split by commas)"
    )
    timeout: float | None = Field(
        default=None, gt=0, le=7 * 86400, description="Seconds to wait for the answer"
    )
    default: str | None = Field(
        default=None, max_length=MAX_CHOICE, description="The answer when none comes in time"
    )

    @field_validator("choices", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):  # /summon's choices=red,green
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("choices")
    @classmethod
    def _bounded(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (
            not value
            or len(value) > MAX_CHOICES
            or len(set(value)) != len(value)
            or any(len(c) > MAX_CHOICE for c in value)
        ):
            raise ValueError(
                f"1 to {MAX_CHOICES} different choices of at most {MAX_CHOICE} characters"
            )
        return value

    effect_seconds: float = Field(
        default=0,
        ge=0,
        le=3600,
        description="Then an outside action of N s that cannot be looked up (stop it: unknown)",
    )


@kind("demo", params=DemoParams, retry_safe=True, max_attempts=3)
async def demo(ctx: Context, params: DemoParams) -> dict[str, Any]:
    """Take a few steps, reporting progress; optionally ask a question, fail or be flaky."""
    state = dict(ctx.resume_state or {})
    done = int(state.get("done", 0))
    if done:
        await ctx.progress(done, params.steps, f"resuming after step {done}")
    asked_at = min(params.ask_at_step, params.steps + 1)
    for number in range(done + 1, params.steps + 2):
        if params.ask is not None and number == asked_at and "answer" not in state:
            await ctx.progress(number - 1, params.steps, "waiting for an answer")
            extra: dict[str, Any] = {} if params.default is None else {"default": params.default}
            answer = await ctx.ask(
                QUESTION_KEY, params.ask, params.choices, timeout=params.timeout, **extra
            )
            state["answer"], state["answered_by"] = str(answer), getattr(answer, "by", None)
            await ctx.checkpoint({**state, "done": number - 1})
        if number > params.steps:
            break
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
        state["done"] = number
        await ctx.checkpoint(state)
    result: dict[str, Any] = {"steps": params.steps, "attempt": ctx.attempt}
    if "answer" in state:
        result |= {"answer": state["answer"], "answered_by": state["answered_by"]}
    if not params.effect_seconds:
        return result

    async def send() -> dict[str, Any]:
        # Deaf to a stop on purpose, like a payment on its way: only the process's end cuts it.
        await asyncio.sleep(params.effect_seconds)
        return {"sent": True}

    await ctx.progress(params.steps, params.steps, "sending (an outside action, no lookup)")
    sent: dict[str, Any] = await ctx.effect("send", send)  # no lookup: unknown if cut off
    return result | sent
