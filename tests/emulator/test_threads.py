"""Thread rules: one thread per message (160004), archived (50083 / unarchive on send),
locked (160005), DMs (50003), permissions (50013), forum posts, auto-archive on the clock."""

from __future__ import annotations

import discord
import pytest
from discord.ext import commands
from discord.http import Route

from discord_emulator import DEFAULT_BOT_PERMISSIONS, Emulator, permissions
from discord_emulator.testing import running_bot

from .conftest import World, make_bot


def text_channel(bot: commands.Bot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_one_thread_per_message(world: World, running: commands.Bot) -> None:
    channel = text_channel(running, world.channel.id)
    msg = await channel.send("start here")
    thread = await msg.create_thread(name="first")
    assert thread.id == msg.id
    with pytest.raises(discord.HTTPException) as exc:
        await msg.create_thread(name="second")
    assert exc.value.status == 400
    assert exc.value.code == 160004
    assert exc.value.text == "A thread has already been created for this message"


async def test_archived_thread_rules(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(name="work", type=discord.ChannelType.public_thread)
    progress = await thread.send("step 1")
    thread = await thread.edit(archived=True)
    assert thread.archived
    with pytest.raises(discord.HTTPException) as exc:
        await progress.edit(content="step 2")
    assert exc.value.code == 50083
    assert exc.value.text == "Thread is archived"
    # Sending unarchives an archived, unlocked thread.
    await thread.send("step 2 (new message)")
    assert not emu.channel(thread.id).thread.archived  # type: ignore[union-attr]
    await progress.edit(content="step 2")
    assert [v.content for v in emu.message(progress.id).versions] == ["step 1", "step 2"]
    # Threads without a message post a THREAD_CREATED system message in the parent.
    assert emu.history(world.channel)[0].type == 18


async def test_locked_thread_needs_manage_threads(emu: Emulator, world: World) -> None:
    guild = emu.create_guild(
        "No manage", bot_permissions=DEFAULT_BOT_PERMISSIONS & ~permissions.MANAGE_THREADS
    )
    chan = emu.create_channel(guild, "general")
    bot = make_bot()
    updates: list[discord.Thread] = []

    async def on_thread_update(before: discord.Thread, after: discord.Thread) -> None:
        updates.append(after)

    bot.add_listener(on_thread_update)
    async with running_bot(emu, bot):
        channel = text_channel(bot, chan.id)
        msg = await channel.send("root")
        thread = await msg.create_thread(name="locked soon")
        emu.edit_thread(thread.id, archived=True, locked=True)
        # discord.py received THREAD_UPDATE (and drops archived threads from its cache).
        await emu.wait_until(lambda: updates and updates[-1].locked, 5)
        with pytest.raises(discord.Forbidden) as exc:
            await thread.send("let me in")
        assert exc.value.code == 160005
        assert exc.value.text == "Thread is locked"
        with pytest.raises(discord.Forbidden) as exc:
            await thread.edit(archived=False)
        assert exc.value.code == 50013


async def test_thread_permissions_and_dm(emu: Emulator, world: World) -> None:
    guild = emu.create_guild(
        "No threads",
        bot_permissions=permissions.VIEW_CHANNEL
        | permissions.SEND_MESSAGES
        | permissions.READ_MESSAGE_HISTORY,
        everyone_permissions=permissions.VIEW_CHANNEL,
    )
    chan = emu.create_channel(guild, "general")
    bot = make_bot()
    async with running_bot(emu, bot):
        channel = text_channel(bot, chan.id)
        msg = await channel.send("root")
        with pytest.raises(discord.Forbidden) as exc:
            await msg.create_thread(name="t")
        assert exc.value.code == 50013
        user = await bot.fetch_user(world.alice.id)
        dm = await user.create_dm()
        route = Route("POST", "/channels/{channel_id}/threads", channel_id=dm.id)
        with pytest.raises(discord.HTTPException) as exc:
            await bot.http.request(route, json={"name": "x", "type": 11})
        assert exc.value.code == 50003
        assert exc.value.text == "Cannot execute action on a DM channel"
        sent = await dm.send("hello in DM")
        assert emu.history(dm.id)[0].id == sent.id


async def test_forum_post_and_private_thread(
    emu: Emulator, world: World, running: commands.Bot
) -> None:
    forum_model = emu.create_forum(world.guild, "reports")
    await emu.wait_until(lambda: running.get_channel(forum_model.id), 5)
    forum = running.get_channel(forum_model.id)
    assert isinstance(forum, discord.ForumChannel)
    post = await forum.create_thread(name="Weekly", content="first post")
    assert post.thread.id == post.message.id
    assert emu.history(post.thread.id)[0].content == "first post"
    with pytest.raises(discord.HTTPException) as exc:
        await running.http.send_message(
            forum.id, params=discord.http.handle_message_parameters(content="x")
        )
    assert exc.value.code == 50008
    channel = text_channel(running, world.channel.id)
    private = await channel.create_thread(name="secret", type=discord.ChannelType.private_thread)
    assert private.type is discord.ChannelType.private_thread
    assert emu.history(world.channel) == []  # no system message for private threads


async def test_auto_archive_follows_the_virtual_clock(world: World, running: commands.Bot) -> None:
    emu = world.emu
    updates: list[discord.Thread] = []

    async def on_thread_update(before: discord.Thread, after: discord.Thread) -> None:
        updates.append(after)

    running.add_listener(on_thread_update)
    channel = text_channel(running, world.channel.id)
    msg = await channel.send("root")
    thread = await msg.create_thread(name="short", auto_archive_duration=60)
    emu.advance(59 * 60)
    assert not emu.channel(thread.id).thread.archived  # type: ignore[union-attr]
    emu.advance(61)
    assert emu.channel(thread.id).thread.archived  # type: ignore[union-attr]
    await emu.wait_until(lambda: updates and updates[-1].archived, 5)  # THREAD_UPDATE arrived
