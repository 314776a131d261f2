"""Pins and bulk delete as Discord documents them (Message resource: Get Channel Pins, Pin
Message, Unpin Message, Bulk Delete Messages; Gateway: Channel Pins Update, Message Delete
Bulk), driven through the real discord.py client."""

from __future__ import annotations

import datetime as dt

import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator, permissions
from discord_emulator.models import MSG_CHANNEL_PINNED_MESSAGE
from discord_emulator.testing import running_bot

from .conftest import World, make_bot


def text_channel(bot: commands.Bot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_pinning_marks_the_message_posts_a_notice_and_tells_the_bot(
    emu: Emulator, world: World
) -> None:
    updates: list[dt.datetime | None] = []
    bot = make_bot()

    @bot.event
    async def on_guild_channel_pins_update(
        channel: discord.abc.GuildChannel, last_pin: dt.datetime | None
    ) -> None:
        updates.append(last_pin)

    async with running_bot(emu, bot):
        channel = text_channel(bot, world.channel.id)
        message = await channel.send("keep this")
        await message.pin()
        assert (await channel.fetch_message(message.id)).pinned
        assert [m.id async for m in channel.pins()] == [message.id]
        notice = [m for m in emu.history(world.channel) if m.type == MSG_CHANNEL_PINNED_MESSAGE]
        assert len(notice) == 1
        assert notice[0].message_reference is not None
        assert notice[0].message_reference["message_id"] == str(message.id)

        await message.unpin()
        assert not (await channel.fetch_message(message.id)).pinned
        assert [m async for m in channel.pins()] == []
        await emu.wait_until(lambda: len(updates) == 2, 5)
    assert updates[0] is not None
    assert updates[1] is None


async def test_pinning_needs_pin_messages(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    message = await channel.send("keep this")
    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.PIN_MESSAGES)
    with pytest.raises(discord.Forbidden) as exc:
        await message.pin()
    assert exc.value.code == 50013
    assert emu.message(message.id).pinned_at is None


async def test_without_read_message_history_no_pins_are_listed(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    message = await channel.send("keep this")
    await message.pin()
    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.READ_MESSAGE_HISTORY)
    assert [m async for m in channel.pins()] == []


async def test_at_most_250_pins_per_channel(world: World, running: commands.Bot) -> None:
    emu = world.emu
    for i in range(250):
        posted = emu.send_message(world.alice, world.channel, f"pin {i}")
        emu.actions.pin_message(posted, world.alice.id)  # as a moderator would
    channel = text_channel(running, world.channel.id)
    message = await channel.send("one more")
    with pytest.raises(discord.HTTPException) as exc:
        await message.pin()
    assert (exc.value.status, exc.value.code) == (400, 30003)


async def test_bulk_delete_removes_messages_and_tells_the_bot_once(
    emu: Emulator, world: World
) -> None:
    bulk: list[set[int]] = []
    bot = make_bot()

    @bot.event
    async def on_raw_bulk_message_delete(event: discord.RawBulkMessageDeleteEvent) -> None:
        bulk.append(event.message_ids)

    async with running_bot(emu, bot):
        channel = text_channel(bot, world.channel.id)
        messages = [await channel.send(f"noise {i}") for i in range(3)]
        await channel.delete_messages(messages)
        await emu.wait_until(lambda: bulk, 5)
    assert bulk == [{m.id for m in messages}]
    assert all(emu.message(m.id).deleted for m in messages)


async def test_bulk_delete_limits(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    first = await channel.send("first")
    second = await channel.send("second")

    with pytest.raises(discord.HTTPException) as exc:
        await running.http.delete_messages(channel.id, [first.id])
    assert (exc.value.status, exc.value.code) == (400, 50016)
    with pytest.raises(discord.HTTPException) as exc:
        await running.http.delete_messages(channel.id, [first.id, first.id])
    assert (exc.value.status, exc.value.code) == (400, 50035)

    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.MANAGE_MESSAGES)
    with pytest.raises(discord.Forbidden) as exc:
        await running.http.delete_messages(channel.id, [first.id, second.id])
    assert exc.value.code == 50013
    emu.set_overwrite(world.channel, emu.bot_user, deny=0)

    emu.advance(15 * 24 * 3600)
    with pytest.raises(discord.HTTPException) as exc:
        await running.http.delete_messages(channel.id, [first.id, second.id])
    assert (exc.value.status, exc.value.code) == (400, 50034)
    assert not emu.message(first.id).deleted
    assert not emu.message(second.id).deleted
