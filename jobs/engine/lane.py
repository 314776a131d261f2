"""A pool connection kept checked out between one-statement calls that follow each other closely.

asyncpg's checkout and return of a pooled connection (a proxy, a task that shields the return,
timers) cost a one-statement submit about a seventh of its time (docs/performance.md). A call that
finds the lane's connection free runs on it and leaves it there; the connection goes back to
the pool once no call has used it for :data:`KEEP_SECONDS`, so whoever waits for the pool
(another verb, ``pool.close()``) waits that long at most. Calls made while the lane's connection
is busy take pooled connections as before: the lane never makes a caller wait.

Only for statements that are their own transaction and leave nothing on the session (see
:func:`jobs.engine.db.create_pool`); a call that fails returns the connection to the pool,
which checks it as it checks any other.
"""

from __future__ import annotations

import asyncio

import asyncpg
from asyncpg.pool import PoolConnectionProxy

KEEP_SECONDS = 0.02
"""How long the lane keeps an unused connection before it goes back to the pool."""


class Lane:
    """One pooled connection kept for one-statement calls made one after another."""

    def __init__(self, pool: asyncpg.Pool, keep_seconds: float = KEEP_SECONDS) -> None:
        self.pool = pool
        self.keep_seconds = keep_seconds
        self._conn: PoolConnectionProxy | None = None  # checked out of the pool, free
        self._used = 0.0  # loop time the free connection was last put back
        self._timer: asyncio.TimerHandle | None = None
        self._returning: set[asyncio.Task[None]] = set()

    async def take(self) -> PoolConnectionProxy:
        """The lane's connection if it is free, else one from the pool."""
        conn, self._conn = self._conn, None
        if conn is not None:
            return conn
        pooled: PoolConnectionProxy = await self.pool.acquire()
        return pooled

    async def put(self, conn: PoolConnectionProxy, *, failed: bool = False) -> None:
        """Give back a connection from :meth:`take`: kept when the lane is free and the call
        succeeded, else returned to the pool (which resets or closes a failed one)."""
        if failed or self._conn is not None:
            await self.pool.release(conn)
            return
        loop = asyncio.get_running_loop()
        self._conn, self._used = conn, loop.time()
        if self._timer is None:
            self._timer = loop.call_at(self._used + self.keep_seconds, self._expire)

    def _expire(self) -> None:
        """Return the free connection to the pool, unless it was used within the keep time."""
        self._timer = None
        if self._conn is None:
            return
        loop = asyncio.get_running_loop()
        left = self._used + self.keep_seconds - loop.time()
        if left > 0:
            self._timer = loop.call_later(left, self._expire)
            return
        conn, self._conn = self._conn, None
        task = loop.create_task(self.pool.release(conn))
        self._returning.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._returning.discard)
