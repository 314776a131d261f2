"""Run a process's long-lived tasks until it is told to stop or one of them ends.

A worker's loops, a bot beside its worker, the sandbox's parts: each is a set of tasks that must
all keep running; when one ends (usually by failing) the process must notice at once and stop
the rest rather than limp on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any


async def supervise(tasks: Collection[asyncio.Future[Any]], stop: asyncio.Event) -> None:
    """Wait until ``stop`` is set or any of ``tasks`` ends; raise the error of a task that failed.

    The tasks are left running (or done): the caller stops the rest its own way, a graceful
    drain or a close, usually in a ``finally``.

    Raises:
        The exception of the first task that failed (CancelledError if it was cancelled).
    """
    stopper = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait([stopper, *tasks], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    for task in done:
        if task is not stopper:
            task.result()
