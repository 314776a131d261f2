"""The job's place on Discord: the thread that follows it, started on its /summon answer.

Summoned in a text or news channel, a job gets a public thread started from its answer (the
anchor); if the answer was never recorded (the bot stopped in between), a short anchor message
is posted first. In a thread or a DM the job follows right there. A forum's job gets a post of
its own, opened by its progress message (:mod:`bot.delivery.progress`).
"""

from __future__ import annotations

import asyncio

import discord

from bot import render
from bot.delivery.bindings import Binding, Bindings
from bot.delivery.discord_io import FORUMS, THREAD_ALREADY_CREATED, THREADABLE, Turns
from bot.delivery.pacer import SETUP
from bot.render import NO_PINGS
from jobs.transport import JobView


def thread_name(job: JobView, task: str) -> str:
    """The name of the job's thread or forum post: its id and task."""
    return f"{job.public_id} · {render.code(task or job.kind, 80)}"


def waits_for_anchor(binding: Binding, anchor_wait_seconds: float) -> bool:
    """Whether the job's thread must wait for its /summon answer to be recorded: the handler
    records it right after answering, and a thread starts from it."""
    return (
        binding.anchor_message_id is None
        and binding.thread_id is None
        and binding.origin.channel_type in THREADABLE
        and binding.age() < anchor_wait_seconds
    )


class Threads:
    """Makes sure each job has its place to follow it in."""

    def __init__(self, client: discord.Client, turns: Turns, bindings: Bindings) -> None:
        self.client = client
        self.turns = turns
        self.bindings = bindings
        self._channel_locks: dict[int, asyncio.Lock] = {}

    async def ensure(self, job: JobView, binding: Binding) -> Binding:
        """The binding with the job's thread (a forum's post is left to its progress message)."""
        origin = binding.origin
        if binding.thread_id or origin.channel_type in FORUMS:
            return binding
        if origin.channel_type in THREADABLE:
            thread_id = await self._start(job, binding)
        else:  # a DM, a thread it was summoned in, or any other text channel: right there
            thread_id = str(origin.channel_id)
        return await self.bindings.set_thread(binding, thread_id)

    async def _start(self, job: JobView, binding: Binding) -> str:
        """Start a thread on the answer in a text or news channel and return its id; without an
        answer recorded, post an anchor first."""
        origin = binding.origin
        parent = self.client.get_partial_messageable(
            origin.channel_id,
            type=discord.ChannelType(origin.channel_type),
            guild_id=origin.guild_id,
        )
        anchor = binding.anchor_message_id
        # One request at a time per channel here: discord.py then knows the bucket (10 threads
        # per 10 s per channel) from the previous answer and waits, instead of sending a burst
        # that Discord answers with 429s.
        async with self._channel_locks.setdefault(origin.channel_id, asyncio.Lock()):
            if anchor is None:
                await self.turns.wait(SETUP)
                msg = await parent.send(
                    f"Job `{job.public_id}` ({job.kind})",
                    nonce=f"a{job.public_id}",
                    allowed_mentions=NO_PINGS,
                )
                anchor = str(msg.id)
            await self.turns.wait(SETUP)
            try:
                # Straight through the HTTP layer: it needs no guild cache, so it works right
                # after a restart, before the gateway has sent GUILD_CREATE.
                made = await self.client.http.start_thread_with_message(
                    origin.channel_id,
                    int(anchor),
                    name=thread_name(job, origin.task),
                    auto_archive_duration=1440,
                )
                return str(made["id"])
            except discord.HTTPException as exc:
                if exc.code != THREAD_ALREADY_CREATED:
                    raise
                return str(anchor)  # a thread started from a message has the message's id
