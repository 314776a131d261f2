"""Which delivery request goes next, and when: pure logic, no I/O (time is passed in).

Discord allows a bot 50 requests per second in all (interaction answers are exempt), and edits
of a message at most 5 per 5 s per channel, 3 per 6 s once the message is older than an hour.
The bot keeps under both on its own instead of provoking 429s:

- :class:`Pacer` grants the bot's delivery requests at most ``rate`` per second, highest
  priority first: the end of a job (its terminal edit, then its notice) before new threads,
  and those before progress edits.
- :func:`edit_interval` and :func:`edit_wait` space the edits of one progress message.

``bot.delivery.discord_io`` waits on a :class:`Pacer` with asyncio; ``bot.delivery`` uses the
edit rules.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from datetime import datetime
from typing import Generic, TypeVar

T = TypeVar("T")

# Priorities, most urgent first.
TERMINAL_EDIT = 0
"""The edit (or first post) that shows a job's terminal state, and requests that unblock it."""
NOTICE = 1
"""A notice to the requester."""
SETUP = 2
"""A new thread, anchor or progress message."""
EDIT = 3
"""A progress edit of a running job."""

OLD_MESSAGE_SECONDS = 3600.0
"""Messages older than this have Discord's slower edit limit."""


class Pacer(Generic[T]):
    """One request per ``1 / rate`` seconds, granted in priority order (FIFO within one).

    After a quiet spell one turn is banked, so any one second holds at most ``rate + 1``
    grants (46 at the default 45, under Discord's 50). Waiting requests are items ``T`` (the
    asyncio side uses futures); :meth:`pop` hands out the next one once its turn has come.
    """

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self._next = 0.0  # the earliest time of the next grant
        self._queue: list[tuple[int, int, T]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._queue)

    def push(self, priority: int, item: T) -> None:
        """Queue a request."""
        heapq.heappush(self._queue, (priority, next(self._seq), item))

    def wait(self, now: float) -> float | None:
        """Seconds until the next request may go (0: now); None when none is waiting."""
        if not self._queue:
            return None
        return max(0.0, self._next - now)

    def pop(self, now: float, *, gone: Callable[[T], bool] = lambda _: False) -> T | None:
        """The request to send at ``now``, or None when none may go yet.

        Requests for which ``gone`` is true (their waiter was cancelled) are dropped without
        spending a turn.
        """
        while self._queue and self._next <= now:
            _, _, item = heapq.heappop(self._queue)
            if gone(item):
                continue
            # After a quiet spell the budget does not pile up: at most one turn is banked.
            self._next = max(self._next, now - self.interval) + self.interval
            return item
        return None

    def drain(self) -> list[T]:
        """Empty the queue: every waiting request, in no particular order."""
        items = [item for _, _, item in self._queue]
        self._queue.clear()
        return items


def edit_interval(
    posted_at: datetime | None, now: datetime, *, interval: float, old_interval: float
) -> float:
    """The minimum time between two edits of a message posted at ``posted_at``."""
    old = posted_at is not None and (now - posted_at).total_seconds() > OLD_MESSAGE_SECONDS
    return old_interval if old else interval


def edit_wait(last_edit: float | None, interval: float, now: float) -> float:
    """Seconds to wait before the next edit of a message last edited at ``last_edit`` (0: now;
    a message this process never edited may be edited at once)."""
    if last_edit is None:
        return 0.0
    return max(0.0, last_edit + interval - now)
