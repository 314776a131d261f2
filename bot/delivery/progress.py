"""The job's progress message: one message, edited through every state, the only module that
posts or edits it.

Coalesced to the latest state: a round shows the job as its claim read it, or, when news came
while it waited its turn, as one second look read it (at most one per round). An unchanged
rendering is never sent; nothing is shown after a terminal state. At most one edit per interval
per message, and a terminal state skips the pause and goes first in the bot's queue. A deleted
message is posted again; an archived thread is unarchived first. In a forum, the progress
message opens the job's post.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Sequence
from datetime import UTC, datetime

import discord

from bot import render
from bot.cancel import cancel_view
from bot.delivery.bindings import Binding, Bindings
from bot.delivery.discord_io import THREAD_ARCHIVED, UNKNOWN_MESSAGE, Turns
from bot.delivery.followed import Followed
from bot.delivery.pacer import EDIT, SETUP, TERMINAL_EDIT, edit_interval, edit_wait
from bot.delivery.thread import thread_name
from bot.errors import Stopping
from bot.render import NO_PINGS
from bot.settings import BotSettings
from jobs.transport import JobView, Outbox, Registry, get_logger

log = get_logger("bot.delivery")


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class ProgressMessage:
    """Posts and edits every job's progress message."""

    def __init__(
        self,
        client: discord.Client,
        turns: Turns,
        *,
        bindings: Bindings,
        outbox: Outbox,
        registry: Registry,
        settings: BotSettings,
        stopped: asyncio.Event,
        stats: dict[str, int],
    ) -> None:
        self.client = client
        self.turns = turns
        self.bindings = bindings
        self.outbox = outbox
        self.registry = registry
        self.settings = settings
        self._stopped = stopped
        self.stats = stats

    def view(
        self, job: JobView, assets: Sequence[tuple[str, int]], binding: Binding
    ) -> render.Progress:
        spec = self.registry.get(job.kind) if job.kind in self.registry else None
        return render.progress(
            job,
            task=binding.origin.task,
            may_resolve=bool(spec and spec.requester_may_resolve),
            assets=assets,
        )

    async def show(
        self,
        followed: Followed,
        job: JobView,
        assets: Sequence[tuple[str, int]],
        binding: Binding,
    ) -> Binding:
        """Show the job's current state (as the round's claim read it) on its progress message,
        posting it first if there is none; the binding as it is then."""
        view = self.view(job, assets, binding)
        if binding.thread_id is None:  # a forum: the progress message opens the job's post
            return await self._open_post(followed, job, binding, view)
        if binding.progress_message_id is None:
            return await self._post(followed, binding, view, nonce=f"p{followed.public_id}")
        if binding.shows_end or binding.progress_hash == _hash(view.key):
            return binding  # never a state after the terminal one; never an empty edit
        if view.state.terminal:
            await self.turns.wait(TERMINAL_EDIT)
        else:
            # Coalesce: at most one edit per interval per message, and a turn in the bot's
            # queue. News while waiting means one second look at the job (the round's only
            # one), so a backlog never replays stale states.
            looked = await self._pause(followed, binding, until_moved=True)
            if looked:  # it may have ended: a terminal state is shown at once
                again = await self.outbox.look(followed.job_id)
                job, assets = again.job, again.assets
                if not job.state.terminal:
                    await self._pause(followed, binding, until_moved=False)
            await self.turns.wait(TERMINAL_EDIT if job.state.terminal else EDIT)
            if not looked and followed.news.is_set():
                again = await self.outbox.look(followed.job_id)
                job, assets = again.job, again.assets
            view = self.view(job, assets, binding)
            if binding.progress_hash == _hash(view.key):
                return binding
        return await self._edit(followed, binding, view)

    async def _pause(self, followed: Followed, binding: Binding, *, until_moved: bool) -> bool:
        """Wait until the message may be edited again, or, ``until_moved``, until the job may
        have changed state; True in that case (nothing waited when the message may be edited
        now)."""
        interval = edit_interval(
            binding.progress_posted_at,
            datetime.now(UTC),
            interval=self.settings.edit_interval_seconds,
            old_interval=self.settings.old_message_edit_interval_seconds,
        )
        wait = edit_wait(followed.last_edit, interval, time.monotonic())
        if wait <= 0:
            return False
        woken = followed.moved if until_moved else self._stopped
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(woken.wait(), wait)
        if self._stopped.is_set():
            raise Stopping
        return until_moved and followed.moved.is_set()

    async def _open_post(
        self, followed: Followed, job: JobView, binding: Binding, view: render.Progress
    ) -> Binding:
        """Open the job's forum post, whose first message is the progress message."""
        buttons = cancel_view(followed.public_id) if view.cancellable else None
        await self.turns.wait(SETUP)
        with discord.http.handle_message_parameters(
            content=view.content,
            view=buttons if buttons is not None else discord.utils.MISSING,
            allowed_mentions=NO_PINGS,
            channel_payload={
                "name": thread_name(job, binding.origin.task),
                "auto_archive_duration": 1440,
                "type": 11,
            },
        ) as params:
            post = await self.client.http.start_thread_in_forum(
                binding.origin.channel_id, params=params
            )
        self.stats["posts"] += 1
        followed.last_edit = time.monotonic()
        return await self.bindings.set_progress_message(
            binding,
            str(post["message"]["id"]),
            view.state,
            _hash(view.key),
            thread_id=str(post["id"]),
        )

    async def _post(
        self, followed: Followed, binding: Binding, view: render.Progress, *, nonce: str
    ) -> Binding:
        assert binding.thread_id is not None
        channel = self.client.get_partial_messageable(int(binding.thread_id))
        await self.turns.wait(TERMINAL_EDIT if view.state.terminal else SETUP)
        message = await channel.send(
            view.content,
            view=cancel_view(followed.public_id) if view.cancellable else discord.utils.MISSING,
            nonce=nonce,
            allowed_mentions=NO_PINGS,
        )
        self.stats["posts"] += 1
        followed.last_edit = time.monotonic()
        return await self.bindings.set_progress_message(
            binding, str(message.id), view.state, _hash(view.key)
        )

    async def _edit(self, followed: Followed, binding: Binding, view: render.Progress) -> Binding:
        """Show ``view`` (the caller has waited its turn); post it again if it was deleted."""
        assert binding.thread_id is not None
        assert binding.progress_message_id is not None
        message = self.client.get_partial_messageable(int(binding.thread_id)).get_partial_message(
            int(binding.progress_message_id)
        )
        buttons = cancel_view(followed.public_id) if view.cancellable else None
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
            # Someone deleted the progress message: post it again (a fresh nonce).
            log.info("delivery.progress_reposted", job_id=followed.public_id)
            nonce = f"r{followed.public_id}{int(time.time()) % 10**9}"
            return await self._post(followed, binding, view, nonce=nonce)
        followed.last_edit = time.monotonic()
        self.stats["edits"] += 1
        return await self.bindings.record_edit(binding, view.state, _hash(view.key))
