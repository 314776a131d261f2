"""What every Discord request of delivery shares: the bot's request queue and the answers
delivery handles on purpose.

Every request of the bot's token waits its turn in :class:`Turns` (the asyncio side of
:class:`bot.delivery.pacer.Pacer`) before it is sent; each message's owner makes its own
requests (``thread``, ``progress``, ``notices``, ``answer``). Nothing here reads or writes the
database.

Mentions: nothing the bot posts pings anyone (``allowed_mentions`` none, the task text
included), except a notice, which pings its requester and no one else.
"""

from __future__ import annotations

import asyncio
import time

import aiohttp
import discord

from bot.delivery.pacer import Pacer
from bot.errors import Stopping

# Discord error codes handled on purpose.
UNKNOWN_MESSAGE = 10008
THREAD_ARCHIVED = 50083
THREAD_ALREADY_CREATED = 160004

# Where a job gets a thread of its own: started on its answer, or a forum post.
THREADABLE = {discord.ChannelType.text.value, discord.ChannelType.news.value}
FORUMS = {discord.ChannelType.forum.value, discord.ChannelType.media.value}


def describe(exc: discord.HTTPException) -> str:
    """A refusal as one short line: ``403 50013: Missing Permissions``."""
    return f"{exc.status} {exc.code}: {exc.text}"[:300]


# Discord not answering: OSError (refused, reset, timed out) and what aiohttp raises outside
# OSError (the server or a proxy closed the connection before answering:
# ServerDisconnectedError; a body cut short: ClientPayloadError). discord.py passes them on.
# Not a refusal: whoever sent the request tries again, counting no attempt.
NO_ANSWER: tuple[type[BaseException], ...] = (
    OSError,
    aiohttp.ClientConnectionError,
    aiohttp.ClientPayloadError,
)


class Turns:
    """The bot's request queue: a request awaits its turn; one task hands turns out, at the
    pacer's rate and in its priority order."""

    def __init__(self, rate: float) -> None:
        self._pacer: Pacer[asyncio.Future[None]] = Pacer(rate)
        self._drainer: asyncio.Task[None] | None = None
        self._closed = False

    async def wait(self, priority: int) -> None:
        """Return when this request may be sent.

        Raises:
            Stopping: the queue was closed (before or while waiting).
        """
        if self._closed:
            raise Stopping
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pacer.push(priority, future)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        await future

    async def _drain(self) -> None:
        # No await between finding the queue empty and returning: a waiter that arrives after
        # this task has ended always sees it done and starts a new one.
        while (delay := self._pacer.wait(time.monotonic())) is not None:
            if delay > 0:
                await asyncio.sleep(delay)
                continue
            future = self._pacer.pop(time.monotonic(), gone=lambda f: f.done())
            if future is not None:
                future.set_result(None)

    def close(self) -> None:
        """Send nothing more: every waiting request (and any later one) gets Stopping."""
        self._closed = True
        if self._drainer is not None:
            self._drainer.cancel()
        for future in self._pacer.drain():
            if not future.done():
                future.set_exception(Stopping())
