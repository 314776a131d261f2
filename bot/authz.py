"""Who may see and moderate a job in Discord, decided by the job's channel, not by the channel a
command happens to be typed in.

- **Seeing** a job (its task, state, result): its requester, or a member who can view the job's
  channel (for a job made in a thread: the thread's parent). Anyone else gets the same
  "No such job." as for an unknown id, so a private channel's jobs cannot even be confirmed.
- **Moderating** a job (cancelling someone else's): Manage Threads *in the job's channel* (or
  the thread's parent), or operator rights (Administrator, or the configured admin role).
- **Accepting** a ``/summon``: only where the bot itself can make the job's thread and post in
  it, checked from the interaction's ``app_permissions`` before any job row exists.

Permissions are computed for the member of the interaction (its roles as Discord sent them)
against the job's channel as fetched from Discord at that moment, so a permission overwrite set
a second ago counts. See docs/discord.md.
"""

from __future__ import annotations

from typing import Any

import discord

from jobs.transport import JobView


async def _job_channel(
    interaction: discord.Interaction[Any], job: JobView
) -> discord.abc.GuildChannel | None:
    """The channel a job belongs to (a thread's parent), fresh from Discord for this
    interaction; None when gone or hidden from the bot."""
    guild = interaction.guild
    raw = job.origin.get("channel_id")
    if guild is None or raw is None or not str(raw).isdigit():
        return None
    # Seeing and then moderating ask for the same channel: fetched once per interaction.
    key = f"errand.job_channel:{raw}"
    if key not in interaction.extras:
        interaction.extras[key] = await _fetch_job_channel(guild, int(raw))
    found: discord.abc.GuildChannel | None = interaction.extras[key]
    return found


async def _fetch_job_channel(
    guild: discord.Guild, channel_id: int
) -> discord.abc.GuildChannel | None:
    try:
        channel: Any = await guild.fetch_channel(channel_id)
    except (discord.NotFound, discord.Forbidden):
        return None
    if isinstance(channel, discord.Thread):
        try:
            channel = await guild.fetch_channel(channel.parent_id)
        except (discord.NotFound, discord.Forbidden):
            return None
    return channel if isinstance(channel, discord.abc.GuildChannel) else None


async def permissions_in_job_channel(
    interaction: discord.Interaction[Any], job: JobView
) -> discord.Permissions:
    """The interaction's member's permissions in the job's channel (none when unknown)."""
    member = interaction.user
    if not isinstance(member, discord.Member):
        return discord.Permissions.none()
    channel = await _job_channel(interaction, job)
    if channel is None:
        return discord.Permissions.none()
    return channel.permissions_for(member)


async def may_view(interaction: discord.Interaction[Any], job: JobView, requester: str) -> bool:
    """Whether the job may be shown to the interaction's user."""
    if job.requester == requester:
        return True
    if job.origin.get("guild_id") is None:  # a DM job: its requester's alone
        return False
    return (await permissions_in_job_channel(interaction, job)).view_channel


async def may_moderate(
    interaction: discord.Interaction[Any], job: JobView, *, operator: bool
) -> bool:
    """Manage Threads in the job's channel, or operator rights."""
    if operator:
        return True
    return (await permissions_in_job_channel(interaction, job)).manage_threads


def summon_refusal(interaction: discord.Interaction[Any]) -> str | None:
    """Why the bot cannot take a job here (it could not make or post in the job's thread), or
    None when it can. From the bot's own permissions in this channel, sent with the interaction.
    """
    channel = interaction.channel
    if channel is None or interaction.guild is None:
        return None  # a DM: the bot answers in the DM itself
    have = interaction.app_permissions
    ctype = channel.type
    if ctype in (discord.ChannelType.text, discord.ChannelType.news):
        needed = {
            "View Channel": have.view_channel,
            "Create Public Threads": have.create_public_threads,
            "Send Messages in Threads": have.send_messages_in_threads,
            "Read Message History": have.read_message_history,
        }
    elif ctype is discord.ChannelType.forum:
        needed = {
            "View Channel": have.view_channel,
            "Send Messages (create posts)": have.send_messages,
            "Send Messages in Threads": have.send_messages_in_threads,
        }
    elif ctype in (
        discord.ChannelType.public_thread,
        discord.ChannelType.private_thread,
        discord.ChannelType.news_thread,
    ):
        needed = {
            "View Channel": have.view_channel,
            "Send Messages in Threads": have.send_messages_in_threads,
        }
    else:
        needed = {"View Channel": have.view_channel, "Send Messages": have.send_messages}
    missing = [name for name, ok in needed.items() if not ok]
    if not missing:
        return None
    return (
        "I can't run a job here: I'm missing "
        + ", ".join(f"**{m}**" for m in missing)
        + " in this channel, so I could not post its progress. Ask a server admin to grant "
        "it, or use another channel. No job was created."
    )
