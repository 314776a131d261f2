"""Live updates: one LISTEN connection per dashboard process, fanned out to every open page as
server-sent events; no page reads the database on a timer.

The engine NOTIFYs ``errand_outbox`` when a job with an origin changes state, ``errand_progress``
when one reports progress (its public id) and ``errand_job`` when one is queued for a waiting
worker; a job without an origin (the CLI's) changes state without a NOTIFY, and the worker's
batch of ends is not made to pay for one. So on each wake-up, and at most every
:data:`CHECK_SECONDS` besides, this one connection reads the events written since the last it
saw (``JobStore.events_since``, one range read of the event table's primary key) and sends
every subscriber the jobs that changed and their states. A page that shows one of them reloads
its live part.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg

from jobs.transport import JobStore, Outbox, backoff, get_logger

log = get_logger("dashboard.live")

CHECK_SECONDS = 0.25
"""How often the one connection looks for events that came without a NOTIFY."""
CHANNELS = (Outbox.CHANNEL, Outbox.PROGRESS_CHANNEL, "errand_job")
QUEUE_LIMIT = 100
"""Updates one slow page may have waiting; past that it is sent a "reload" instead."""


LOOKBACK = 200
"""Events are read again this far behind the newest seen: an event id is taken before its
transaction commits, so a smaller one may become visible after a larger one."""


class Changes:
    """The events written since the last read, by the jobs they moved (each event once)."""

    def __init__(self, store: JobStore) -> None:
        self.store = store
        self._after: int | None = None
        self._seen: set[int] = set()

    def forget(self) -> None:
        self._after = None
        self._seen.clear()

    async def begin(self) -> None:
        """Start reading from the newest event now (a first page opened its stream)."""
        if self._after is None:
            self._after = await self.store.last_event_id()

    async def read(self) -> dict[str, str | None]:
        """``{public id: state}`` of the jobs with events not read before (none on the first
        call, which only marks where reading starts)."""
        if self._after is None:
            self._after = await self.store.last_event_id()
            return {}
        rows = await self.store.events_since(self._after - LOOKBACK)
        fresh = [r for r in rows if r.id not in self._seen]
        if rows:
            self._after = max(self._after, rows[-1].id)
        floor = self._after - LOOKBACK
        self._seen = {i for i in self._seen if i > floor} | {r.id for r in fresh}
        return {r.public_id: r.state for r in fresh}


class Live:
    """The process's one listener and its subscribers (each an open page's event stream)."""

    def __init__(self, store: JobStore, dsn: str) -> None:
        self.store = store
        self.dsn = dsn
        self._subscribers: set[asyncio.Queue[dict[str, Any]]] = set()
        self._wake = asyncio.Event()
        self._progress: set[str] = set()
        self._changes = Changes(store)

    async def run(self, stop: asyncio.Event) -> None:
        """Listen and fan out until ``stop``; a lost connection is opened again with backoff."""
        failures = 0
        while not stop.is_set():
            try:
                await self._listen(stop)
                failures = 0
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                failures += 1
                log.warning("dashboard.listener_lost", error=f"{type(exc).__name__}: {exc}"[:200])
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), backoff(failures, base=0.5, cap=5.0))

    async def _listen(self, stop: asyncio.Event) -> None:
        conn = await asyncpg.connect(self.dsn)
        try:
            for channel in CHANNELS:
                await conn.add_listener(channel, self._heard)
            changes = self._changes
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), CHECK_SECONDS)
                self._wake.clear()
                if conn.is_closed():  # NOTIFYs would be lost: listen again
                    raise ConnectionResetError("the LISTEN connection closed")
                if not self._subscribers:  # nobody watches: read nothing
                    self._progress.clear()
                    changes.forget()
                    continue
                jobs = await changes.read()
                for public_id in self._progress:
                    jobs.setdefault(public_id, None)
                self._progress.clear()
                if jobs:
                    self.publish({"jobs": [{"id": k, "state": v} for k, v in jobs.items()]})
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 2)

    def _heard(self, _conn: Any, _pid: int, channel: str, payload: object) -> None:
        if channel == Outbox.PROGRESS_CHANNEL and payload:
            self._progress.add(str(payload))
        self._wake.set()

    def publish(self, update: dict[str, Any]) -> None:
        """Send ``update`` to every subscriber (a full queue gets a reload instead)."""
        for queue in list(self._subscribers):
            if queue.qsize() >= QUEUE_LIMIT:
                with contextlib.suppress(asyncio.QueueEmpty):
                    while True:
                        queue.get_nowait()
                queue.put_nowait({"reload": True})
            else:
                queue.put_nowait(update)

    async def updates(self) -> AsyncIterator[str]:
        """One subscriber's stream: each update as an SSE ``data:`` line's JSON."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._subscribers.add(queue)
        try:
            # From the moment the stream opens: what changes after it reaches this page.
            await self._changes.begin()
            while True:
                yield json.dumps(await queue.get())
        finally:
            self._subscribers.discard(queue)
