"""Guild writes through discord.py: Create Guild Channel (Manage Channels, form limits, the
overwrites a bot may set)."""

from __future__ import annotations

import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator, permissions
from discord_emulator.testing import World, running_bot

from .conftest import make_bot


def guild_of(bot: commands.Bot, world: World) -> discord.Guild:
    guild = bot.get_guild(world.guild.id)
    assert guild is not None
    return guild


async def test_create_channel_needs_manage_channels(world: World, running: commands.Bot) -> None:
    guild = guild_of(running, world)
    with pytest.raises(discord.Forbidden) as exc:
        await guild.create_text_channel("nope")
    assert (exc.value.status, exc.value.code) == (403, 50013)
    assert [c.name for c in guild.channels] == ["general"]


async def test_create_channel_form_limits_and_overwrites(emu: Emulator, world: World) -> None:
    emu.create_role(world.guild, "channels", permissions.MANAGE_CHANNELS, members=[emu.bot_user])
    async with running_bot(emu, make_bot()) as bot:
        guild = guild_of(bot, world)
        with pytest.raises(discord.HTTPException) as exc:
            await guild.create_text_channel("x" * 101, topic="t" * 1025)
        assert (exc.value.status, exc.value.code) == (400, 50035)
        assert "In name: Must be between 1 and 100 in length." in exc.value.text
        assert "In topic: Must be 1024 or fewer in length." in exc.value.text
        alice = await guild.fetch_member(world.alice.id)
        # Only permissions the bot has in the guild can be allowed or denied...
        beyond = {alice: discord.PermissionOverwrite(manage_webhooks=True)}
        with pytest.raises(discord.Forbidden) as exc:
            await guild.create_text_channel("webhooks", overwrites=beyond)
        assert exc.value.code == 50013
        # ...and Manage Roles in a channel only by an administrator.
        emu.create_role(world.guild, "roles", permissions.MANAGE_ROLES, members=[emu.bot_user])
        roles = {alice: discord.PermissionOverwrite(manage_roles=True)}
        with pytest.raises(discord.Forbidden) as exc:
            await guild.create_text_channel("roles", overwrites=roles)
        assert exc.value.code == 50013
        hidden = {
            guild.default_role: discord.PermissionOverwrite(view_channel=False),
            alice: discord.PermissionOverwrite(view_channel=True, send_messages=False),
        }
        made = await guild.create_text_channel("hideout", overwrites=hidden, topic="quiet")
        category = await guild.create_category("Rooms")
        voice = await guild.create_voice_channel("lounge", category=category)
        await emu.wait_until(lambda: bot.get_channel(voice.id))
        seen = bot.get_channel(made.id)
    assert isinstance(seen, discord.TextChannel)
    assert seen.topic == "quiet"
    assert seen.overwrites_for(guild.default_role).view_channel is False
    assert isinstance(voice, discord.VoiceChannel)
    assert voice.category_id == category.id
    stored = emu.channel(made.id)
    assert permissions.channel_permissions(emu.state, stored, world.alice.id) == (
        permissions.DEFAULT_EVERYONE & ~permissions.SEND_MESSAGES
    )
    assert [emu.channel(c).name for c in world.guild.channel_ids] == [
        "general",
        "hideout",
        "Rooms",
        "lounge",
    ]
