"""What every slash command shares: the bot as the commands see it (:class:`Host`), who asks
and where, the one kind of answer users see (:func:`reply`), the 3 s deadline (:func:`in_time`),
and finding a job the caller may see (:func:`visible`).

Jobs are visible only where they were made (the guild, or the requester's DM); anywhere else the
answer is "no such job", the same as for an id that never existed. Answers never ping anyone
(``allowed_mentions`` none): a task text with ``@everyone`` or a role mention stays inert.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

import asyncpg
import discord

from bot import authz
from bot.queries import sql
from bot.render import NO_PINGS, TRANSPORT
from bot.settings import BotSettings
from jobs.transport import JobStore, JobView, Outbox, Registry, UnknownJob, read_id

MAX_TASK = 1500
MAX_PARAMS = 1000
MAX_NOTE = 500

NO_SUCH_JOB = "No such job."
NO_JOB_HERE = "Give a job id, or ask inside a job's thread."

T = TypeVar("T")


class Wakes(Protocol):
    """Delivery, as the commands see it: told when a job changed, and of each new answer."""

    def poke(self, job_id: int, public_id: str) -> None: ...

    def remember_answer(
        self,
        job_id: int,
        public_id: str,
        interaction: discord.Interaction[Any],
        channel_type: int,
    ) -> None: ...


class Host(Protocol):
    """What the commands use of the bot (``bot.client.ErrandBot`` provides it)."""

    settings: BotSettings
    registry: Registry
    store: JobStore
    pool: asyncpg.Pool
    outbox: Outbox

    @property
    def delivery(self) -> Wakes: ...


def host_of(interaction: discord.Interaction[Any]) -> Host:
    """The bot that received the interaction."""
    host: Host = interaction.client
    return host


def requester_of(user: discord.abc.User) -> str:
    """How a Discord user is recorded as a requester."""
    return f"{TRANSPORT}:{user.id}"


def group_of(interaction: discord.Interaction[Any]) -> str:
    """Where jobs are visible: the guild, or the user's DMs."""
    if interaction.guild_id is not None:
        return str(interaction.guild_id)
    return f"dm:{interaction.user.id}"


async def reply(interaction: discord.Interaction[Any], text: str) -> None:
    """A short ephemeral answer (the only kind of error users see)."""
    if interaction.response.is_done():
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_PINGS)
    else:
        await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_PINGS)


async def in_time(
    interaction: discord.Interaction[Any], work: Awaitable[T], *, ephemeral: bool = True
) -> T:
    """Await ``work`` (database reads and writes); should it outlast ``defer_after_seconds`` (a
    slow database, a job row locked by a worker), acknowledge first with a deferred answer
    (``ephemeral`` or not): Discord drops answers later than 3 s. The answer then goes out as
    the first follow-up (``interaction.response.is_done()`` tells which)."""
    task = asyncio.ensure_future(work)
    timeout = host_of(interaction).settings.defer_after_seconds
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done and not interaction.response.is_done():
        await interaction.response.defer(ephemeral=ephemeral, thinking=True)
    return await task


async def visible(interaction: discord.Interaction[Any], raw: str | None) -> JobView | None:
    """The job ``raw`` names if the caller may see it here; inside a job's thread, the thread's
    job when ``raw`` is empty."""
    host = host_of(interaction)
    if not raw:
        if interaction.channel_id is None:
            return None
        raw = await sql.fetchval(
            host.pool, "binding_job_by_thread", thread_id=str(interaction.channel_id)
        )
        if raw is None:
            return None
    try:
        job = await host.store.get(read_id(raw))  # text that is no id never reaches the store
    except UnknownJob:
        return None
    if job.origin.get("transport") != TRANSPORT or job.origin_group != group_of(interaction):
        return None
    if not await authz.may_view(interaction, job, requester_of(interaction.user)):
        return None  # the same answer as an unknown id: a private channel's jobs stay hidden
    return job


def is_operator(interaction: discord.Interaction[Any]) -> bool:
    """Members with the configured admin role (or Administrator) are operators."""
    user = interaction.user
    if not isinstance(user, discord.Member):
        return False
    if user.guild_permissions.administrator:
        return True
    role = host_of(interaction).settings.admin_role
    return role is not None and any(role in (r.name, str(r.id)) for r in user.roles)


async def may_moderate(interaction: discord.Interaction[Any], job: JobView) -> bool:
    """Manage Threads in the job's channel (not where the command was typed) or operator
    rights."""
    return await authz.may_moderate(interaction, job, operator=is_operator(interaction))
