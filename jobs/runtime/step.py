"""Steps: named blocks of a handler, each with its own budget, recorded in the ``step`` table.

``async with ctx.step("call model") as meter:`` opens a step (refused once the job was asked to
stop or its step budget is spent), runs the block under the step's wall-time bound, and records
the step's end with its usage and outcome. Model and tool code report usage through the
:class:`~jobs.runtime.budget.Meter`, which raises
:class:`~jobs.errors.BudgetExceeded` inside the step on the first
excess. The job's usage (all attempts together) is written after every step.

A step cut short because its worker stops (shutdown, a lost lease; a crash is closed the same
way by the transition that ends the attempt) or because its job parks (a long wait inside it)
ends ``interrupted``: it runs again in the next attempt (from the handler's last checkpoint), so
it does not count against ``job_steps``; the tokens it used stay charged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from jobs.engine.records import StepOutcome
from jobs.errors import BOUND_NAMES, BudgetExceeded, JobCancelled, JobParked, LeaseLost
from jobs.runtime.attempt import Attempt, StopReason
from jobs.runtime.budget import Budget, Meter, Usage
from jobs.secrets import scrub
from jobs.traces import tracing


def _stopped(ctx: Attempt, *, lost: bool = False) -> StepOutcome:
    """The outcome of a step stopped from outside: interrupted (runs again) or cancelled."""
    worker_stop = lost or ctx.stop_reason in (StopReason.SHUTDOWN, StopReason.LOST)
    parked = ctx.parked is not None and ctx.stop_reason is None  # it waits: it runs again
    return StepOutcome.INTERRUPTED if worker_stop or parked else StepOutcome.CANCELLED


class Steps:
    """One attempt's steps and the job's usage so far."""

    def __init__(self) -> None:
        self.usage: Usage | None = None  # loaded on the first step: earlier attempts count too
        # Steps may run at once (asyncio.gather): checking the step budget, counting the step
        # and numbering it happen one step at a time, so concurrency cannot escape the bound.
        self._opening = asyncio.Lock()

    async def job_usage(self, attempt: Attempt) -> Usage:
        if self.usage is None:
            stored = await attempt.write("usage", attempt.records.job_usage)
            usage = Usage.model_validate(stored.usage)
            usage.steps = stored.steps
            self.usage = usage
        return self.usage

    @asynccontextmanager
    async def step(self, ctx: Attempt, budget: Budget, name: str) -> AsyncIterator[Meter]:
        ctx.checkpoint()  # no new step starts once a stop was requested
        async with self._opening:
            job = await self.job_usage(ctx)
            if budget.job_steps is not None and job.steps + 1 > budget.job_steps:
                raise BudgetExceeded("job_steps", job.steps + 1, budget.job_steps)
            # Retried through an outage: a start whose reply was lost leaves one extra open
            # step row, which is better than failing the job over bookkeeping.
            step_id, number = await ctx.write("step_start", lambda: ctx.records.step_start(name))
            job.steps += 1  # counted when it starts; its tokens as they are reported
        meter = Meter(budget, job, name)
        ctx.log.info("step.started", step=name, number=number)
        started = time.monotonic()
        outcome: StepOutcome = StepOutcome.OK
        error: str | None = None
        deadline: asyncio.Timeout | None = None
        try:
            with tracing.span("errand.step", step=name, number=number):
                async with asyncio.timeout(budget.step_seconds) as deadline:
                    yield meter
        except TimeoutError:
            elapsed = round(time.monotonic() - started, 3)
            if budget.step_seconds is None or deadline is None or not deadline.expired():
                outcome, error = StepOutcome.FAILED, "TimeoutError"
                raise
            outcome = StepOutcome.BUDGET_EXCEEDED
            exc = BudgetExceeded("step_seconds", elapsed, budget.step_seconds)
            error = str(exc)
            raise exc from None
        except BudgetExceeded as exc:
            outcome, error = StepOutcome.BUDGET_EXCEEDED, str(exc)
            raise
        except (asyncio.CancelledError, LeaseLost, JobCancelled, JobParked) as exc:
            if ctx.job_deadline is not None and ctx.job_deadline.expired():
                # The job's time bound ran out during this step (execute says so for the job).
                outcome = StepOutcome.BUDGET_EXCEEDED
                error = f"budget exceeded: {BOUND_NAMES['job_seconds']}"
            else:
                outcome = _stopped(ctx, lost=isinstance(exc, LeaseLost))
            raise
        except Exception as exc:
            outcome, error = StepOutcome.FAILED, f"{type(exc).__name__}: {exc}"[:500]
            raise
        finally:
            if outcome is StepOutcome.INTERRUPTED:
                job.steps -= 1  # it runs again; counting it twice would spend the budget twice
            meter.usage.seconds = round(time.monotonic() - started, 3)
            job.seconds = round(job.seconds + meter.usage.seconds, 3)
            await self._record_end(ctx, step_id, meter.usage, outcome, error)
            ctx.log.info("step.ended", step=name, outcome=outcome, usage=meter.usage.to_json())

    async def _record_end(
        self, ctx: Attempt, step_id: int, usage: Usage, outcome: StepOutcome, error: str | None
    ) -> None:
        assert self.usage is not None
        job_usage = self.usage.to_json()
        text = scrub(error) if error else None
        # Idempotent (a step ends once, usage is a plain value): retried through an outage.
        await ctx.write(
            "step_end",
            lambda: ctx.records.step_end(step_id, usage.to_json(), outcome, text, job_usage),
        )
