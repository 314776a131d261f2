"""The schedules' ticker: every Errand process (a worker, a bot) runs one, so schedules tick
while any process is up. A round every :data:`TICK_SECONDS`; which process enqueues a tick does
not matter, and none enqueues it twice (:mod:`jobs.engine.store.schedules`)."""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg

from jobs.engine.db import UNAVAILABLE
from jobs.engine.store import JobStore
from jobs.logs import get_logger

log = get_logger("ticker")

_ERRORS: tuple[type[BaseException], ...] = (asyncpg.PostgresError, *UNAVAILABLE)

TICK_SECONDS = 0.5
"""How often a process looks for due ticks: a schedule every second gets each tick enqueued
within about half a second."""


async def run_ticker(store: JobStore, stop: asyncio.Event, every: float = TICK_SECONDS) -> None:
    """Tick until ``stop`` is set; an outage or a refused round is logged and tried again."""
    while not stop.is_set():
        try:
            made = await store.tick()
            if made:
                log.info("schedule.ticked", jobs=made)
        except _ERRORS as exc:
            log.warning("schedule.round_failed", error=f"{type(exc).__name__}: {exc}"[:300])
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
