"""A virtual clock and Discord snowflake generator.

Time in the emulator is real wall time plus an offset that tests can advance, so that token
expiry (15 min), message age (the 1 h edit limit) and thread auto-archive can be exercised
without sleeping, while short real waits (rate-limit windows) still elapse naturally.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable

# https://discord.com/developers/docs/reference#snowflakes: ms since 2015-01-01T00:00:00Z.
DISCORD_EPOCH_MS = 1420070400000


class VirtualClock:
    """Wall clock plus an adjustable offset (seconds)."""

    def __init__(self) -> None:
        self._offset = 0.0
        self._listeners: list[Callable[[], None]] = []

    def time(self) -> float:
        """Seconds since the Unix epoch, as the emulator sees it."""
        return time.time() + self._offset

    def now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.time(), dt.UTC)

    def iso(self, at: float | None = None) -> str:
        """ISO 8601 with microseconds and +00:00, the format Discord uses for timestamps."""
        value = self.time() if at is None else at
        return dt.datetime.fromtimestamp(value, dt.UTC).isoformat()

    def advance(self, seconds: float) -> None:
        """Jump forward; listeners (e.g. the thread auto-archiver) run afterwards."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self._offset += seconds
        for listener in list(self._listeners):
            listener()

    def on_advance(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)


class SnowflakeGenerator:
    """Timestamp-based ids: (ms since Discord epoch) << 22 | worker << 17 | process << 12 | inc."""

    def __init__(self, clock: VirtualClock, worker: int = 1, process: int = 0) -> None:
        self._clock = clock
        self._worker = worker
        self._process = process
        self._increment = 0
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            ms = int(self._clock.time() * 1000) - DISCORD_EPOCH_MS
            self._increment = (self._increment + 1) & 0xFFF
            value = (ms << 22) | (self._worker << 17) | (self._process << 12) | self._increment
            # Ids must be strictly increasing even within one millisecond.
            if value <= self._last:
                value = self._last + 1
            self._last = value
            return value


def snowflake_time(snowflake: int) -> float:
    """Unix seconds encoded in a snowflake."""
    return ((snowflake >> 22) + DISCORD_EPOCH_MS) / 1000.0
