"""Thread membership and deletion (issue point 4) and guild changes while the bot runs
(issue point 5)."""

from __future__ import annotations

import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator, InteractionRefused, permissions
from discord_emulator.testing import running_bot

from .conftest import World, make_bot


def text_channel(bot: commands.Bot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


def dispatched(emu: Emulator, event: str) -> list[dict[str, object]]:
    return [
        e.data
        for e in emu.events.log
        if e.kind == "gateway_dispatch" and e.extra.get("event") == event
    ]


async def test_joining_a_thread_dispatches_members_update_and_thread_create(
    emu: Emulator, world: World
) -> None:
    bot = make_bot()
    joins: list[int] = []

    async def on_thread_join(thread: discord.Thread) -> None:
        joins.append(thread.id)

    bot.add_listener(on_thread_join)
    async with running_bot(emu, bot):
        thread = emu.actions.create_thread(world.channel, world.alice.id, "alice's")
        await emu.wait_until(lambda: bot.get_channel(thread.id), 5)
        live = bot.get_channel(thread.id)
        assert isinstance(live, discord.Thread)
        assert live.me is None
        await live.join()
        # discord.py replaces its Thread object on THREAD_CREATE; read the current one.
        await emu.wait_until(lambda: getattr(bot.get_channel(thread.id), "me", None), 5)
        await emu.wait_until(lambda: thread.id in joins, 5)
    (update,) = dispatched(emu, "THREAD_MEMBERS_UPDATE")
    assert update["added_members"][0]["user_id"] == str(emu.bot_user.id)  # type: ignore[index]
    assert [t["id"] for t in dispatched(emu, "THREAD_CREATE")][-1] == str(thread.id)


async def test_archived_thread_refuses_joins_and_commands_but_allows_deletes(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(name="work", type=discord.ChannelType.public_thread)
    note = await thread.send("to delete")
    await thread.leave()
    emu.edit_thread(thread.id, archived=True)
    with pytest.raises(discord.HTTPException) as exc:
        await thread.join()
    assert (exc.value.status, exc.value.code) == (400, 50083)
    await note.delete()
    assert emu.message(note.id).deleted
    with pytest.raises(InteractionRefused):
        await emu.invoke_slash(world.alice, thread.id, "ping")


async def test_adding_and_removing_thread_members(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(name="pair", type=discord.ChannelType.private_thread)
    await thread.add_user(discord.Object(world.alice.id))
    assert world.alice.id in emu.channel(thread.id).thread_member_ids
    await thread.remove_user(discord.Object(world.alice.id))
    assert world.alice.id not in emu.channel(thread.id).thread_member_ids
    stranger = emu.create_user("stranger")
    with pytest.raises(discord.NotFound) as exc:
        await thread.add_user(discord.Object(stranger.id))
    assert exc.value.code == 10007


async def test_deleting_threads_and_channels(world: World, running: commands.Bot) -> None:
    emu = world.emu
    deleted: list[int] = []

    async def on_thread_delete(thread: discord.Thread) -> None:
        deleted.append(thread.id)

    async def on_guild_channel_delete(channel: discord.abc.GuildChannel) -> None:
        deleted.append(channel.id)

    running.add_listener(on_thread_delete)
    running.add_listener(on_guild_channel_delete)
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(name="temp", type=discord.ChannelType.public_thread)
    await thread.delete()
    await emu.wait_until(lambda: thread.id in deleted, 5)
    assert thread.id not in emu.state.channels
    assert emu.channel(thread.id).name == "temp"

    doomed = emu.create_channel(world.guild, "doomed")
    await emu.wait_until(lambda: running.get_channel(doomed.id), 5)
    live = running.get_channel(doomed.id)
    assert isinstance(live, discord.TextChannel)
    with pytest.raises(discord.Forbidden) as exc:
        await live.delete()
    assert exc.value.code == 50013
    emu.set_overwrite(doomed, emu.bot_user, allow=permissions.MANAGE_CHANNELS)
    await live.delete()
    await emu.wait_until(lambda: doomed.id in deleted, 5)
    with pytest.raises(discord.NotFound) as exc:
        await live.send("anyone?")
    assert exc.value.code == 10003

    # The control API deletes as a moderator would.
    other = emu.create_channel(world.guild, "other")
    await emu.wait_until(lambda: running.get_channel(other.id), 5)
    emu.delete_channel(other)
    await emu.wait_until(lambda: other.id in deleted, 5)
    assert running.get_channel(other.id) is None


async def test_bot_joining_a_guild_while_running_gets_guild_create(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    joined: list[int] = []

    async def on_guild_join(guild: discord.Guild) -> None:
        joined.append(guild.id)

    running.add_listener(on_guild_join)
    other = emu.create_guild("Other", bot_permissions=None)
    emu.create_channel(other, "lobby")
    role = emu.create_role(other, "Errand", 0, managed=True)
    emu.add_member(other, emu.bot_user, roles=[role])
    await emu.wait_until(lambda: joined, 5)
    assert joined == [other.id]
    guild = running.get_guild(other.id)
    assert guild is not None
    assert [c.name for c in guild.text_channels] == ["lobby"]
