"""The job's notices: one reply in its thread per notice-worthy transition, pinging its
requester, the only module that posts them.

Exactly once: a notice is sent with a nonce derived from its event (``enforce_nonce``), so a
resend after a crash between Discord's answer and the outbox's record returns the message
already made instead of a second one.
"""

from __future__ import annotations

import discord

from bot import render
from bot.delivery.bindings import Binding
from bot.delivery.discord_io import Turns
from bot.delivery.pacer import NOTICE
from jobs.transport import JobView, Notice, get_logger

log = get_logger("bot.delivery")


class Notices:
    """Posts every job's notices."""

    def __init__(self, client: discord.Client, turns: Turns, stats: dict[str, int]) -> None:
        self.client = client
        self.turns = turns
        self.stats = stats

    async def post(self, job: JobView, notice: Notice, binding: Binding) -> str:
        """Reply in the job's thread, pinging its requester and no one else; the message id."""
        assert binding.thread_id is not None
        user_id = binding.origin.user_id
        mentions = discord.AllowedMentions(
            everyone=False,
            roles=False,
            users=[discord.Object(user_id)] if user_id else False,
        )
        channel = self.client.get_partial_messageable(int(binding.thread_id))
        await self.turns.wait(NOTICE)
        message = await channel.send(
            render.notice(job, notice, user_id),
            allowed_mentions=mentions,
            # "e": since migration 0009 a notice's id is its event's; a new prefix keeps these
            # nonces from meeting one made from an old outbox row's id ("n") in Discord's window.
            nonce=f"e{notice.id}",
        )
        self.stats["notices"] += 1
        message_id = str(message.id)
        log.info(
            "delivery.notice", job_id=job.public_id, state=notice.to_state, message_id=message_id
        )
        return message_id
