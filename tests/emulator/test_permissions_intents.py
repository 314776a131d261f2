"""Permissions and intents (issue point 3): Read Message History for fetching and replying,
no MESSAGE_CREATE from channels the bot cannot view, GUILD_MEMBER_ADD only with the
GUILD_MEMBERS intent."""

from __future__ import annotations

import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator, permissions
from discord_emulator.testing import running_bot

from .conftest import World


def text_channel(bot: commands.Bot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_fetching_or_replying_needs_read_message_history(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    user_msg = emu.send_message(world.alice, world.channel, "please look")
    own = await channel.send("mine")
    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.READ_MESSAGE_HISTORY)
    with pytest.raises(discord.Forbidden) as exc:
        await channel.fetch_message(own.id)
    assert exc.value.code == 50001
    with pytest.raises(discord.Forbidden) as exc:
        await channel.get_partial_message(user_msg.id).reply("on it")
    assert exc.value.code == 50013
    # A plain send still works.
    await channel.send("still here")
    emu.set_overwrite(world.channel, emu.bot_user, deny=0)
    assert (await channel.fetch_message(own.id)).content == "mine"


async def test_no_message_create_from_channels_the_bot_cannot_view(
    emu: Emulator, world: World
) -> None:
    hidden = emu.create_channel(world.guild, "staff")
    emu.set_overwrite(hidden, emu.bot_user, deny=permissions.VIEW_CHANNEL)
    seen: list[str] = []
    intents = discord.Intents.default()
    intents.message_content = True
    bot = commands.Bot(command_prefix="!", intents=intents, guild_ready_timeout=0.05)

    @bot.event
    async def on_message(message: discord.Message) -> None:
        seen.append(message.content)

    async with running_bot(emu, bot):
        emu.send_message(world.alice, hidden, "secret")
        emu.send_message(world.alice, world.channel, "public")
        await emu.wait_until(lambda: seen, 5)
    assert seen == ["public"]


async def test_member_join_needs_the_guild_members_intent(emu: Emulator, world: World) -> None:
    joined: list[int] = []

    def member_adds() -> int:
        return sum(
            1
            for e in emu.events.log
            if e.kind == "gateway_dispatch" and e.extra.get("event") == "GUILD_MEMBER_ADD"
        )

    plain = commands.Bot(
        command_prefix="!", intents=discord.Intents.default(), guild_ready_timeout=0.05
    )

    @plain.event
    async def on_member_join(member: discord.Member) -> None:
        joined.append(member.id)

    async with running_bot(emu, plain):
        bob = emu.create_user("bob")
        emu.add_member(world.guild, bob)
        await channel_roundtrip(plain, world)
        assert member_adds() == 0
        assert joined == []

    intents = discord.Intents.default()
    intents.members = True
    members = commands.Bot(command_prefix="!", intents=intents, guild_ready_timeout=0.05)
    members.add_listener(on_member_join)
    async with running_bot(emu, members):
        carol = emu.create_user("carol")
        emu.add_member(world.guild, carol)
        await emu.wait_until(lambda: joined, 5)
    assert joined == [carol.id]
    assert member_adds() == 1


async def channel_roundtrip(bot: commands.Bot, world: World) -> None:
    """Send and see our own message come back, so earlier dispatches have been processed."""
    got: list[int] = []

    async def on_message(message: discord.Message) -> None:
        got.append(message.id)

    bot.add_listener(on_message)
    sent = await text_channel(bot, world.channel.id).send("sync")
    await world.emu.wait_until(lambda: sent.id in got, 5)
    bot.remove_listener(on_message)
