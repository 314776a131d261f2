"""The Discord requests of delivery: threads, the progress message and notices.

Every request waits its turn in the bot's request queue (:class:`Turns`, the asyncio side of
:class:`bot.delivery.pacer.Pacer`), except a progress edit, whose caller waits first so that it
shows the state read after its wait. Nothing here reads or writes the database.

Mentions: nothing the bot posts pings anyone (``allowed_mentions`` none, the task text
included), except a notice, which pings its requester and no one else.
"""

from __future__ import annotations

import asyncio
import time

import aiohttp
import discord

from bot import render
from bot.cancel import cancel_view
from bot.delivery.pacer import NOTICE, SETUP, TERMINAL_EDIT, Pacer
from bot.errors import Stopping
from bot.render import NO_PINGS

# Discord error codes handled on purpose.
UNKNOWN_MESSAGE = 10008
THREAD_ARCHIVED = 50083
THREAD_ALREADY_CREATED = 160004

THREADS = {
    discord.ChannelType.public_thread.value,
    discord.ChannelType.private_thread.value,
    discord.ChannelType.news_thread.value,
}
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


class DiscordIO:
    """Delivery's discord.py calls, paced."""

    def __init__(self, client: discord.Client, requests_per_second: float) -> None:
        self.client = client
        self.turns = Turns(requests_per_second)
        self._channel_locks: dict[int, asyncio.Lock] = {}

    def close(self) -> None:
        self.turns.close()

    async def start_thread(
        self,
        channel_id: int,
        channel_type: int,
        guild_id: int | None,
        anchor: str | None,
        *,
        name: str,
        anchor_text: str,
        anchor_nonce: str,
    ) -> str:
        """Start a thread on ``anchor`` in a text or news channel and return its id; without
        an anchor (the /summon answer was never recorded), post ``anchor_text`` first."""
        parent = self.client.get_partial_messageable(
            channel_id, type=discord.ChannelType(channel_type), guild_id=guild_id
        )
        # One request at a time per channel here: discord.py then knows the bucket (10 threads
        # per 10 s per channel) from the previous answer and waits, instead of sending a burst
        # that Discord answers with 429s.
        async with self._channel_locks.setdefault(channel_id, asyncio.Lock()):
            if anchor is None:
                await self.turns.wait(SETUP)
                msg = await parent.send(anchor_text, nonce=anchor_nonce, allowed_mentions=NO_PINGS)
                anchor = str(msg.id)
            await self.turns.wait(SETUP)
            try:
                # Straight through the HTTP layer: it needs no guild cache, so it works right
                # after a restart, before the gateway has sent GUILD_CREATE.
                made = await self.client.http.start_thread_with_message(
                    channel_id, int(anchor), name=name, auto_archive_duration=1440
                )
                return str(made["id"])
            except discord.HTTPException as exc:
                if exc.code != THREAD_ALREADY_CREATED:
                    raise
                return str(anchor)  # a thread started from a message has the message's id

    async def start_forum_post(
        self, channel_id: int, view: render.Progress, *, name: str, public_id: str
    ) -> tuple[str, str]:
        """Open a forum post whose first message is the progress message; returns the post's
        (thread) id and the message id."""
        buttons = cancel_view(public_id) if view.cancellable else None
        await self.turns.wait(SETUP)
        with discord.http.handle_message_parameters(
            content=view.content,
            view=buttons if buttons is not None else discord.utils.MISSING,
            allowed_mentions=NO_PINGS,
            channel_payload={"name": name, "auto_archive_duration": 1440, "type": 11},
        ) as params:
            post = await self.client.http.start_thread_in_forum(channel_id, params=params)
        return str(post["id"]), str(post["message"]["id"])

    async def post_progress(
        self, thread_id: str, view: render.Progress, *, public_id: str, nonce: str, priority: int
    ) -> str:
        """Post the progress message; returns its id."""
        channel = self.client.get_partial_messageable(int(thread_id))
        await self.turns.wait(priority)
        message = await channel.send(
            view.content,
            view=cancel_view(public_id) if view.cancellable else discord.utils.MISSING,
            nonce=nonce,
            allowed_mentions=NO_PINGS,
        )
        return str(message.id)

    async def edit_progress(
        self, thread_id: str, message_id: str, view: render.Progress, *, public_id: str
    ) -> bool:
        """Show ``view`` on the progress message (the caller has waited its turn); False when
        the message was deleted. An archived thread is unarchived first."""
        message = self.client.get_partial_messageable(int(thread_id)).get_partial_message(
            int(message_id)
        )
        buttons = cancel_view(public_id) if view.cancellable else None
        try:
            try:
                await message.edit(content=view.content, view=buttons, allowed_mentions=NO_PINGS)
            except discord.HTTPException as exc:
                if exc.code != THREAD_ARCHIVED:
                    raise
                # Archived (inactivity or a moderator): unarchive, then edit again.
                await self.turns.wait(TERMINAL_EDIT)
                await self.client.http.edit_channel(message.channel.id, archived=False)
                await self.turns.wait(TERMINAL_EDIT)
                await message.edit(content=view.content, view=buttons, allowed_mentions=NO_PINGS)
        except discord.NotFound as exc:
            if exc.code != UNKNOWN_MESSAGE:
                raise
            return False
        return True

    async def send_notice(
        self, thread_id: str, text: str, *, user_id: int | None, nonce: str
    ) -> str:
        """Reply in the thread, pinging the requester ``user_id`` and no one else; returns the
        message id. The same ``nonce`` always returns the same message: Discord answers a resend
        after a crash with the first message instead of a duplicate."""
        mentions = discord.AllowedMentions(
            everyone=False,
            roles=False,
            users=[discord.Object(user_id)] if user_id else False,
        )
        channel = self.client.get_partial_messageable(int(thread_id))
        await self.turns.wait(NOTICE)
        message = await channel.send(text, allowed_mentions=mentions, nonce=nonce)
        return str(message.id)

    async def edit_answer(self, channel_id: int, message_id: int, text: str) -> bool:
        """Edit the /summon answer with the bot's token (its interaction token is gone); False
        when it was deleted or is out of reach (archived, no access)."""
        message = self.client.get_partial_messageable(channel_id).get_partial_message(message_id)
        await self.turns.wait(NOTICE)
        try:
            await message.edit(content=text, allowed_mentions=NO_PINGS)
        except (discord.NotFound, discord.Forbidden):
            return False
        return True
