"""State-change events: a publish hub with async waiters and queue subscriptions.

Tests wait on these instead of sleeping; a live view (e.g. a browser page) subscribes to them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EmulatorEvent:
    """One state change. ``kind`` is e.g. ``message_create``, ``thread_update``,
    ``interaction_response``, ``gateway_dispatch``; ``data`` is the Discord-shaped payload."""

    kind: str
    data: dict[str, Any]
    at: float
    extra: dict[str, Any] = field(default_factory=dict)


class Subscription:
    """An async iterator over events published after it was created; close it when done."""

    def __init__(self, hub: EventHub, maxsize: int) -> None:
        self._hub = hub
        self.queue: asyncio.Queue[EmulatorEvent] = asyncio.Queue(maxsize=maxsize)
        self.dropped = 0

    def __aiter__(self) -> AsyncIterator[EmulatorEvent]:
        return self

    async def __anext__(self) -> EmulatorEvent:
        return await self.queue.get()

    async def get(self, timeout: float | None = None) -> EmulatorEvent:  # noqa: ASYNC109
        return await asyncio.wait_for(self.queue.get(), timeout)

    def close(self) -> None:
        self._hub._subscriptions.discard(self)

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class EventHub:
    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()
        self._waiters: list[tuple[Callable[[EmulatorEvent], bool], asyncio.Future[EmulatorEvent]]]
        self._waiters = []
        # The recent past, for assertions; bounded so a long-running sandbox does not grow.
        self.log: deque[EmulatorEvent] = deque(maxlen=20000)

    def publish(self, event: EmulatorEvent) -> None:
        self.log.append(event)
        for sub in list(self._subscriptions):
            try:
                sub.queue.put_nowait(event)
            except asyncio.QueueFull:
                # A slow viewer must never block the emulator; it loses events instead.
                sub.dropped += 1
        for pred, fut in list(self._waiters):
            if fut.done():
                continue
            try:
                if pred(event):
                    fut.set_result(event)
            except Exception as exc:
                fut.set_exception(exc)

    def subscribe(self, maxsize: int = 10000) -> Subscription:
        sub = Subscription(self, maxsize)
        self._subscriptions.add(sub)
        return sub

    async def wait_for(
        self,
        predicate: Callable[[EmulatorEvent], bool],
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> EmulatorEvent:
        """Wait for the next event matching ``predicate`` (events already published don't count)."""
        fut: asyncio.Future[EmulatorEvent] = asyncio.get_running_loop().create_future()
        entry = (predicate, fut)
        self._waiters.append(entry)
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(entry)
