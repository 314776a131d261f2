"""Steps: named blocks of a handler, each with its own budget, recorded in the ``step`` table.

``async with ctx.step("call model") as meter:`` opens a step (refused once the job was asked to
stop or its step budget is spent), runs the block under the step's wall-time bound, and records
the step's end with its usage and outcome. Model and tool code report usage through the
:class:`~jobs.runtime.budget.Meter`, which raises
:class:`~jobs.runtime.budget.BudgetExceeded` inside the step on
the first excess. The job's usage (all attempts together) is written after every step.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from jobs.engine.queries import q
from jobs.runtime.budget import Budget, BudgetExceeded, Meter, Usage
from jobs.secrets import scrub

if TYPE_CHECKING:
    from jobs.runtime.context import Context


class LeaseLost(Exception):
    """This attempt no longer holds the job's lease: whatever it writes would be ignored."""


class Steps:
    """One attempt's steps and the job's usage so far."""

    def __init__(self) -> None:
        self.usage: Usage | None = None  # loaded on the first step: earlier attempts count too
        # Steps may run at once (asyncio.gather): checking the step budget, counting the step
        # and numbering it happen one step at a time, so concurrency cannot escape the bound.
        self._opening = asyncio.Lock()

    async def job_usage(self, ctx: Context) -> Usage:
        if self.usage is None:
            row = await ctx.store.pool.fetchrow(q("job_usage_get"), ctx.job_id)
            usage = Usage.model_validate(row["usage"] if row else {})
            usage.steps = int(row["steps"]) if row else 0
            self.usage = usage
        return self.usage

    @asynccontextmanager
    async def step(self, ctx: Context, name: str) -> AsyncIterator[Meter]:
        ctx.checkpoint()  # no new step starts once a stop was requested
        budget: Budget = ctx.budget
        async with self._opening:
            job = await self.job_usage(ctx)
            if budget.job_steps is not None and job.steps + 1 > budget.job_steps:
                raise BudgetExceeded("job_steps", job.steps + 1, budget.job_steps)
            row = await ctx.store.pool.fetchrow(q("step_start"), ctx.job_id, ctx.attempt_id, name)
            if row is None:
                raise LeaseLost(ctx.public_id)
            job.steps += 1  # counted when it starts; its tokens as they are reported
        meter = Meter(budget, job, name)
        ctx.log.info("step.started", step=name, number=row["number"])
        started = time.monotonic()
        outcome, error = "ok", None
        deadline: asyncio.Timeout | None = None
        try:
            async with asyncio.timeout(budget.step_seconds) as deadline:
                yield meter
        except TimeoutError:
            elapsed = round(time.monotonic() - started, 3)
            if budget.step_seconds is None or deadline is None or not deadline.expired():
                outcome, error = "failed", "TimeoutError"
                raise
            outcome = "budget_exceeded"
            exc = BudgetExceeded("step_seconds", elapsed, budget.step_seconds)
            error = str(exc)
            raise exc from None
        except BudgetExceeded as exc:
            outcome, error = "budget_exceeded", str(exc)
            raise
        except (asyncio.CancelledError, LeaseLost):
            outcome = "cancelled"
            raise
        except Exception as exc:
            from jobs.runtime.context import JobCancelled

            if isinstance(exc, JobCancelled):
                outcome = "cancelled"
            else:
                outcome, error = "failed", f"{type(exc).__name__}: {exc}"[:500]
            raise
        finally:
            meter.usage.seconds = round(time.monotonic() - started, 3)
            job.seconds = round(job.seconds + meter.usage.seconds, 3)
            await self._record_end(ctx, row["id"], meter.usage, outcome, error)
            ctx.log.info("step.ended", step=name, outcome=outcome, usage=meter.usage.to_json())

    async def _record_end(
        self, ctx: Context, step_id: int, usage: Usage, outcome: str, error: str | None
    ) -> None:
        assert self.usage is not None
        async with ctx.store.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                q("step_end"), step_id, usage.to_json(), outcome, scrub(error) if error else None
            )
            await conn.execute(q("job_set_usage"), ctx.job_id, ctx.attempt_id, self.usage.to_json())
