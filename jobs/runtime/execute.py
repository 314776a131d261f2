"""How the worker runs one handler: inside the job's wall-time bound, and how its end becomes a
:class:`~jobs.engine.moves.Finish` (the worker records it through the store and the
transition table).

| the handler...                         | the attempt ends as                                |
|----------------------------------------|----------------------------------------------------|
| returns                                | ``succeeded`` with the returned value as result    |
| stops at a checkpoint (cancel)         | ``cancelled``                                      |
| is cancelled at an await (cancel)      | ``cancelled``                                      |
| stops on worker shutdown               | ``released``: queued again when the kind is        |
|                                        | retry-safe and attempts remain, else the job ends  |
|                                        | ``unknown`` ("worker stopped mid-run")             |
| parks (a long wait: ``JobParked``)     | ``parked``: the job waits, and resumes from its    |
|                                        | checkpoint once the wait is over                   |
| cannot have its runtime writes stored  | nothing: left to lease expiry and the reaper       |
|  (a database outage longer than lease) |                                                    |
| exceeds a budget                       | ``failed``, reason naming the bound and the usage  |
| raises :class:`JobFailed`              | ``failed`` with its message, no retry              |
| hits an effect in doubt without lookup | ``unknown``                                        |
| raises anything else                   | a retry when the kind is retry-safe and failures   |
|                                        | remain (``max_attempts``), else ``failed``         |

Only the last two use up one of ``max_attempts`` (``failures``); see docs/state-machine.md.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import jobs.limits as limits
from jobs.engine.moves import AttemptOutcome, Finish
from jobs.engine.policy import STOPPED_MID_RUN
from jobs.errors import (
    BudgetExceeded,
    DatabaseUnavailable,
    EffectInDoubt,
    JobCancelled,
    JobFailed,
    JobParked,
    LeaseLost,
)
from jobs.retry import backoff
from jobs.runtime.attempt import StopReason
from jobs.runtime.context import Context
from jobs.runtime.registry import Kind
from jobs.runtime.waits import describe
from jobs.secrets import redact_error


def _end(ctx: Context, outcome: AttemptOutcome, **how: Any) -> Finish:
    return Finish(ctx.job_id, ctx.attempt_id, outcome=outcome, **how)


async def execute(
    spec: Kind, ctx: Context, *, retry_base: float = 1.0, retry_cap: float = 300.0
) -> Finish:
    """Run ``spec``'s handler for the attempt ``ctx`` and say how the attempt ended.

    A handler that parked ends ``parked`` however it ended after that (it must let
    :class:`~jobs.errors.JobParked` through; one that caught it and went on is parked anyway, and
    runs again from its checkpoint), unless it was cancelled meanwhile.
    """
    finish = await _execute(spec, ctx, retry_base=retry_base, retry_cap=retry_cap)
    if ctx.parked is not None and finish.outcome is not AttemptOutcome.CANCELLED:
        return parked(ctx)
    return finish


def parked(ctx: Context) -> Finish:
    """How an attempt whose handler parked ends: ``parked``, with what it waits for."""
    assert ctx.parked is not None
    return _end(ctx, AttemptOutcome.PARKED, wait=ctx.parked, reason=describe(ctx.parked))


async def _execute(spec: Kind, ctx: Context, *, retry_base: float, retry_cap: float) -> Finish:
    claim = ctx.claim
    task = asyncio.current_task()
    try:
        deadline: asyncio.Timeout | None = None
        limit = ctx.budget.job_seconds
        # The per-job time bound covers every attempt: earlier ones ran for ``spent`` seconds.
        spent = 0.0
        if limit is not None:
            spent = await ctx.records.seconds_spent()
        started = time.monotonic()
        try:
            if limit is not None and spent >= limit:
                raise BudgetExceeded("job_seconds", round(spent, 3), limit)
            # A cancel request cancels this task at the handler's next await (Context.bind).
            ctx.bind(task)
            try:
                async with asyncio.timeout(None if limit is None else limit - spent) as deadline:
                    ctx.job_deadline = deadline
                    result = await spec.handler(ctx, spec.parse(claim.params))
            finally:
                ctx.bind(None)
        except TimeoutError:
            if deadline is None or not deadline.expired() or limit is None:
                raise
            used = round(spent + time.monotonic() - started, 3)
            raise BudgetExceeded("job_seconds", used, limit) from None
    except asyncio.CancelledError:
        # Ours (a cancel request) ends the attempt as cancelled; any other cancellation of the
        # task (lost lease, end of the shutdown grace) goes on to the worker.
        if task is None or not ctx.cancel_delivered or task.uncancel() > 0:
            raise
        await ctx.flush()
        return stopped(spec, ctx)
    except (JobCancelled, LeaseLost):
        await ctx.flush()
        return stopped(spec, ctx)
    except JobParked:
        await ctx.flush()
        return parked(ctx)
    except DatabaseUnavailable:
        raise  # not the job's fault: the worker leaves the attempt to the reaper
    except BudgetExceeded as exc:
        await ctx.flush()
        ctx.log.warning("job.budget_exceeded", bound=exc.bound, used=exc.used, limit=exc.limit)
        error: dict[str, object] = {
            "type": "BudgetExceeded",
            "message": str(exc),
            "bound": exc.bound,
            "used": exc.used,
            "limit": exc.limit,
        }
        return _end(ctx, AttemptOutcome.FAILED, error=error, reason=str(exc))
    except EffectInDoubt as exc:
        await ctx.flush()
        ctx.log.warning("job.effect_in_doubt", key=exc.key)
        doubt = redact_error(exc)  # the effect's key is the kind's text: scrubbed like any error
        return _end(ctx, AttemptOutcome.UNKNOWN, error=doubt, reason=doubt["message"][:500])
    except JobFailed as exc:
        await ctx.flush()
        failure = redact_error(exc)
        ctx.log.warning("job.attempt_failed", error=failure["message"])
        return _end(ctx, AttemptOutcome.FAILED, error=failure, reason=failure["message"][:500])
    except Exception as exc:
        await ctx.flush()
        failure = redact_error(exc)
        reason = f"error: {failure['type']}: {failure['message']}"[:500]
        ctx.log.warning("job.attempt_failed", error=failure["message"])
        # This failure is number failures + 1; a retry only while that leaves one to try.
        if spec.retry_safe and claim.failures + 1 < claim.max_attempts:
            delay = backoff(claim.failures + 1, base=retry_base, cap=retry_cap)
            run_at = datetime.now(UTC) + timedelta(seconds=delay)
            return _end(ctx, AttemptOutcome.RETRY, error=failure, reason=reason, run_at=run_at)
        return _end(ctx, AttemptOutcome.FAILED, error=failure, reason=reason)
    await ctx.flush()
    refused = _unstorable(result)
    if refused is not None:
        # Written as is, the result would be refused by PostgreSQL in the worker's batched
        # finish, taking the other outcomes of the batch (and the flush loop) down with it.
        ctx.log.warning("job.result_unstorable", error=refused)
        message = f"result cannot be stored as JSON: {refused}"
        error = {"type": "UnstorableResult", "message": message}
        return _end(ctx, AttemptOutcome.FAILED, error=error, reason=message)
    return _end(ctx, AttemptOutcome.SUCCEEDED, result=result)


def stopped(spec: Kind, ctx: Context) -> Finish:
    """How an attempt that stopped on request ends: cancelled, or on a worker shutdown released
    for another worker (a release uses up no attempt) only when the kind is safe to run again
    from the start or the job saved a checkpoint to resume from; otherwise the job ends
    ``unknown``, since nobody knows how far it got."""
    if ctx.stop_reason is not StopReason.SHUTDOWN:
        return _end(ctx, AttemptOutcome.CANCELLED)
    if spec.retry_safe or ctx.resume_state is not None:
        return _end(ctx, AttemptOutcome.RELEASED)
    return _end(ctx, AttemptOutcome.RELEASED, reason=STOPPED_MID_RUN, mid_run=True)


def _unstorable(result: Any) -> str | None:
    """Why ``result`` cannot be stored in a ``jsonb`` column, or None when it can."""
    if result is None or (isinstance(result, dict) and not result):
        return None  # most handlers return nothing: no need to write it out to know
    try:
        text = json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return str(exc)[:200]
    if limits.has_nul_escape(text):
        return "text contains a NUL character"
    return None
