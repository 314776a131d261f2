"""Guild writes through discord.py: Create Guild Channel (Manage Channels, form limits, the
overwrites a bot may set)."""

from __future__ import annotations

import datetime as dt

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


def members_bot() -> commands.Bot:
    intents = discord.Intents.default()
    intents.members = True
    return commands.Bot(command_prefix="!", intents=intents, guild_ready_timeout=0.05)


async def test_timeouts_follow_moderate_members_the_hierarchy_and_28_days(
    emu: Emulator, world: World
) -> None:
    guild_id = world.guild.id
    admin = emu.create_user("admin")
    emu.add_member(world.guild, admin)
    emu.create_role(world.guild, "admins", permissions.ADMINISTRATOR, members=[admin])
    async with running_bot(emu, members_bot()) as bot:
        guild = bot.get_guild(guild_id)
        assert guild is not None
        alice = guild.get_member(world.alice.id)
        assert alice is not None
        soon = discord.utils.utcnow() + dt.timedelta(minutes=10)
        with pytest.raises(discord.Forbidden) as exc:
            await alice.timeout(soon)
        assert exc.value.code == 50013  # no Moderate Members
        emu.create_role(world.guild, "mods", permissions.MODERATE_MEMBERS, members=[emu.bot_user])
        with pytest.raises(discord.HTTPException) as exc:
            await alice.timeout(discord.utils.utcnow() + dt.timedelta(days=28, minutes=1))
        assert (exc.value.status, exc.value.code) == (400, 50035)
        assert "INVALID_COMMUNICATION_DISABLED_TIMESTAMP" in str(emu.requests[-1].body)
        for untouchable in (world.guild.owner_id, admin.id):
            target = guild.get_member(untouchable)
            assert target is not None
            with pytest.raises(discord.Forbidden) as exc:
                await target.timeout(soon)
            assert exc.value.code == 50013
        await alice.timeout(soon, reason="spam")
        await emu.wait_until(lambda: alice.is_timed_out())
        assert alice.timed_out_until == soon
        await alice.timeout(None)
        await emu.wait_until(lambda: not alice.is_timed_out())
    assert world.guild.members[world.alice.id].communication_disabled_until is None


async def test_modify_member_nick_roles_and_voice(emu: Emulator, world: World) -> None:
    low = emu.create_role(world.guild, "low")
    bot_role = emu.create_role(
        world.guild,
        "nicks",
        permissions.MANAGE_NICKNAMES | permissions.MANAGE_ROLES,
        members=[emu.bot_user],
    )
    high = emu.create_role(world.guild, "high")
    async with running_bot(emu, members_bot()) as bot:
        guild = bot.get_guild(world.guild.id)
        assert guild is not None
        alice = guild.get_member(world.alice.id)
        assert alice is not None
        with pytest.raises(discord.Forbidden) as exc:
            await alice.edit(roles=[guild.get_role(high.id)])  # type: ignore[list-item]
        assert exc.value.code == 50013
        with pytest.raises(discord.HTTPException) as exc:
            await alice.edit(mute=True)
        assert (exc.value.status, exc.value.code) == (400, 40032)
        edited = await alice.edit(nick="Ali", roles=[guild.get_role(low.id)])  # type: ignore[list-item]
        assert edited is not None
        assert (edited.nick, [r.id for r in edited.roles[1:]]) == ("Ali", [low.id])
    member = world.guild.members[world.alice.id]
    assert (member.nick, member.roles) == ("Ali", [low.id])
    assert bot_role.position < high.position
