"""The message content intent on REST reads: an app without it enabled in the developer portal
reads others' messages with empty content, embeds, attachments and components, except those that
mention it, those in its DMs and its own; the intents it asks for in IDENTIFY change nothing
there. The bot is the real discord.py client."""

from __future__ import annotations

import discord
from discord.ext import commands

from discord_emulator import Emulator, intents
from discord_emulator.testing import running_bot

from .conftest import World


def text_channel(bot: commands.Bot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_rest_reads_follow_the_apps_message_content_intent(
    emu: Emulator, world: World
) -> None:
    assert emu.application is not None
    emu.application.privileged_intents = intents.GUILD_MEMBERS  # no MESSAGE_CONTENT
    alice, bot_id = world.alice, emu.bot_user.id
    embed = {"title": "a card", "description": "with words"}
    plain = emu.send_message(alice, world.channel, "plain words", embeds=[embed])
    pinged = emu.send_message(alice, world.channel, f"hello <@{bot_id}>")
    dm = emu.create_dm(alice)
    private = emu.send_message(alice, dm, "just between us")
    bot = commands.Bot(
        command_prefix="!", intents=discord.Intents.default(), guild_ready_timeout=0.05
    )
    async with running_bot(emu, bot):
        channel = text_channel(bot, world.channel.id)
        mine = await channel.send("the bot's own words")
        reply = await (await channel.fetch_message(plain.id)).reply("noted")
        emu.actions.pin_message(plain, alice.id)
        fetched = {m.id: m for m in [m async for m in channel.history(limit=10)]}
        one = await channel.fetch_message(plain.id)
        pinned = [m async for m in channel.pins()]
        in_dm = await (await bot.create_dm(discord.Object(alice.id))).fetch_message(private.id)
        # Enabling the intent in the portal is enough: IDENTIFY still does not ask for it.
        emu.application.privileged_intents |= intents.MESSAGE_CONTENT
        granted = await channel.fetch_message(plain.id)
    assert (one.content, one.embeds) == ("", [])
    assert (fetched[plain.id].content, fetched[plain.id].embeds) == ("", [])
    assert [(m.id, m.content) for m in pinned] == [(plain.id, "")]
    assert fetched[pinged.id].content == f"hello <@{bot_id}>"
    assert fetched[mine.id].content == "the bot's own words"
    assert in_dm.content == "just between us"
    # The bot's reply is its own; the message it replies to is alice's, and stays unread.
    assert fetched[reply.id].content == "noted"
    assert fetched[reply.id].reference is not None
    resolved = fetched[reply.id].reference.resolved
    assert isinstance(resolved, discord.Message)
    assert resolved.content == ""
    assert granted.content == "plain words"
    assert [e.title for e in granted.embeds] == ["a card"]
