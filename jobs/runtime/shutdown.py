"""How a worker stops the attempts it runs, in bounded time (docs/cancellation.md, "Worker
shutdown is not a cancel").

1. Drain: running attempts get ``shutdown_grace_seconds`` to end on their own.
2. The rest are asked to stop (a checkpoint raises ``JobCancelled``, a child process gets
   SIGTERM); whatever still runs :data:`STOP_WAIT_SECONDS` later has its task cancelled and
   gets :data:`CANCEL_WAIT_SECONDS` to unwind. An attempt that ends in these steps is recorded
   by the worker as usual, once every thread it started has returned.
3. What still runs then (a ``run_blocking`` thread that never returns, a handler that swallows
   cancellation) is ended by :func:`left_behind` the way it would have ended had it stopped,
   and dies with the process, which exits at once: a deploy's SIGTERM never waits on a job.

A second signal (a hard stop) skips what is left of steps 1 and 2. Everything together stays
within the grace plus :data:`EXIT_WITHIN_SECONDS`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from jobs.engine.moves import AttemptOutcome, Finish
from jobs.logs import get_logger
from jobs.runtime.attempt import StopReason
from jobs.runtime.context import Context
from jobs.runtime.execute import stopped
from jobs.runtime.registry import Kind

log = get_logger("worker")

STOP_WAIT_SECONDS = 2.5
"""After the grace, how long an attempt asked to stop gets to do so at a checkpoint (a command
to end on SIGTERM) before the await it is in is cancelled."""

CANCEL_WAIT_SECONDS = 0.5
"""After that cancel, how long a handler gets to unwind and its threads to return."""

HARD_STOP_WAIT_SECONDS = 0.5
"""On a second signal, how long the attempts get to unwind after their cancel."""

RECORD_WITHIN_SECONDS = 1.0
"""How long the worker tries to record the end of the attempts still running at the bound;
an end not written by then is left to the lease and the reaper."""

EXIT_WITHIN_SECONDS = 5.0
"""A stopping worker's process exits within the shutdown grace plus this (docs/deploy.md)."""


@dataclass
class Running:
    """One attempt the worker runs: its context, kind, task, and when it started."""

    ctx: Context
    spec: Kind
    task: asyncio.Task[None]
    started: float
    """``time.monotonic()`` at the claim."""
    stop_sent: bool = False
    """Whether the shutdown cancelled its task already (it does so once)."""


async def stop_attempts(
    running: Mapping[int, Running], *, grace: float, hard: asyncio.Event
) -> None:
    """Steps 1 and 2: return once ``running`` is empty or the bound after ``grace`` passed.

    ``running`` is the worker's own map: an attempt leaves it when its end is recorded.
    """
    hard_stop = asyncio.ensure_future(hard.wait())
    try:
        log.info("worker.draining", jobs=len(running))
        await _wait(running, hard_stop, grace)
        if running and not hard.is_set():
            log.info("worker.stopping_jobs", jobs=len(running))
            for item in running.values():
                item.ctx.request_stop(StopReason.SHUTDOWN)  # a checkpoint raises
            await _wait(running, hard_stop, STOP_WAIT_SECONDS)
        if running:
            _cancel(running)
            within = HARD_STOP_WAIT_SECONDS if hard.is_set() else CANCEL_WAIT_SECONDS
            await _wait(running, None, within)
    finally:
        hard_stop.cancel()


def _cancel(running: Mapping[int, Running]) -> None:
    """Ask every attempt to stop and cancel the await its handler is in (once)."""
    for item in running.values():
        item.ctx.request_stop(StopReason.SHUTDOWN)
        if not item.stop_sent:
            item.stop_sent = True
            item.task.cancel()


async def _wait(
    running: Mapping[int, Running], hard: asyncio.Future[Any] | None, within: float
) -> None:
    """Wait until no attempt runs, ``hard`` is done or ``within`` seconds passed."""
    end = time.monotonic() + within
    while running and not (hard is not None and hard.done()):
        left = end - time.monotonic()
        if left <= 0:
            return
        waits: list[asyncio.Future[Any]] = [item.task for item in running.values()]
        if hard is not None:
            waits.append(hard)
        await asyncio.wait(waits, timeout=left, return_when=asyncio.FIRST_COMPLETED)


def left_behind(item: Running, lease_seconds: float) -> Finish | None:
    """Step 3: how an attempt still running at the bound ends (None: its lease was lost, there
    is nothing to record).

    As if it had stopped (:func:`~jobs.runtime.execute.stopped`): released when the kind is
    retry-safe or the job saved a checkpoint, else ``unknown``; ``cancelled`` when a cancel came
    first. A released job becomes due only when its lease would have run out, as after a crash:
    its thread may still work until this process has exited, and no other worker may start the
    job meanwhile.
    """
    if item.ctx.stop_reason is StopReason.LOST:
        return None
    finish = stopped(item.spec, item.ctx)
    if finish.outcome is AttemptOutcome.RELEASED and not finish.mid_run:
        due = datetime.now(UTC) + timedelta(seconds=lease_seconds)
        finish = replace(finish, run_at=due)
    return finish
