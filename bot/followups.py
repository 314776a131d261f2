"""Follow-ups: a message in a job's thread that mentions the bot, from the job's requester, goes
to the job's mailbox (:meth:`jobs.transport.JobStore.tell`), acknowledged with a reaction.

A message that mentions the bot carries its content without the privileged message-content
intent (Discord's documented exception); the bot needs only the guild messages intent, which is
not privileged, to receive it. Messages from anyone but the requester, and messages that do not
mention the bot, are left alone. The message's id is the follow-up's transport id, so a
message Discord sends twice (a gateway resume) is recorded once. ``/job tell`` does the same
from a command (``bot/commands/job.py``).
"""

from __future__ import annotations

import re

import asyncpg
import discord

from bot.commands.shared import requester_of
from bot.queries import sql
from jobs import ErrandError
from jobs.transport import Actor, JobStore, UnknownJob, get_logger

log = get_logger("bot.followups")

DELIVERED = "📨"
"""The reaction on a follow-up the job's mailbox took."""
REFUSED = "📭"
"""The reaction on a follow-up to a job that has ended (nothing was recorded)."""


def words(content: str, bot_id: int) -> str:
    """The follow-up's words: the message without its mentions of the bot."""
    return re.sub(rf"<@!?{bot_id}>", " ", content).strip()


async def on_mention(
    message: discord.Message, *, me: discord.ClientUser, store: JobStore, pool: asyncpg.Pool
) -> bool:
    """Deliver ``message`` to its thread's job when it is a follow-up; whether it was one."""
    if message.author.bot or not isinstance(message.channel, discord.Thread):
        return False
    if not any(user.id == me.id for user in message.mentions):
        return False
    public_id = await sql.fetchval(pool, "binding_job_by_thread", thread_id=str(message.channel.id))
    if public_id is None:
        return False
    try:
        job = await store.get(public_id)
    except UnknownJob:
        return False
    sender = requester_of(message.author)
    text = words(message.content, me.id)
    if job.requester != sender or not text:
        return False  # not the requester's: not delivered
    try:
        await store.tell(
            job.public_id,
            text,
            actor=Actor.REQUESTER,
            by=sender,
            transport_id=f"discord:message:{message.id}",
        )
        reaction = DELIVERED
    except ErrandError as exc:
        # The job ended (nothing recorded), or words Errand refuses: said quietly.
        log.info("followup.refused", job_id=job.public_id, error=type(exc).__name__)
        reaction = REFUSED
    try:
        await message.add_reaction(reaction)
    except discord.HTTPException as exc:  # the mailbox has it: the reaction is a courtesy
        log.warning("followup.reaction_failed", job_id=job.public_id, status=exc.status)
    log.info("followup.received", job_id=job.public_id, delivered=reaction == DELIVERED)
    return True
