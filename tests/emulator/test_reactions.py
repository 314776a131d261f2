"""Reactions as Discord documents them (Message resource: Create Reaction and after; Gateway:
Message Reaction events), driven through the real discord.py client."""

from __future__ import annotations

import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator, permissions
from discord_emulator.testing import running_bot

from .conftest import World, make_bot


def text_channel(bot: commands.Bot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_reactions_show_on_the_message_with_who_reacted(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    message = await channel.send("vote")
    await message.add_reaction("👍")
    emu.react(world.alice, message.id, "👍")
    emu.react(world.alice, message.id, "🎉")

    fetched = await channel.fetch_message(message.id)
    counts = {str(r.emoji): (r.count, r.me) for r in fetched.reactions}
    assert counts == {"👍": (2, True), "🎉": (1, False)}
    thumbs = next(r for r in fetched.reactions if str(r.emoji) == "👍")
    assert sorted([u.id async for u in thumbs.users()]) == sorted([emu.bot_user.id, world.alice.id])

    await message.remove_reaction("👍", running.user)  # type: ignore[arg-type]
    fetched = await channel.fetch_message(message.id)
    assert {str(r.emoji): r.me for r in fetched.reactions} == {"👍": False, "🎉": False}


async def test_an_emoji_that_is_not_unicode_or_usable_is_unknown(
    world: World, running: commands.Bot
) -> None:
    channel = text_channel(running, world.channel.id)
    message = await channel.send("vote")
    for emoji in ("thumbsup", ":thumbsup:", "<:blob:1234567890>"):
        with pytest.raises(discord.HTTPException) as exc:
            await message.add_reaction(emoji)
        assert (exc.value.status, exc.value.code) == (400, 10014)
    assert not world.emu.message(message.id).reactions


async def test_reacting_needs_read_message_history_and_add_reactions_for_a_new_emoji(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    message = await channel.send("vote")
    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.ADD_REACTIONS)
    with pytest.raises(discord.Forbidden) as exc:
        await message.add_reaction("👍")
    assert exc.value.code == 50013
    # Joining an emoji someone already used needs no Add Reactions.
    emu.react(world.alice, message.id, "👍")
    await message.add_reaction("👍")
    assert emu.message(message.id).reactions["👍"] == [world.alice.id, emu.bot_user.id]

    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.READ_MESSAGE_HISTORY)
    with pytest.raises(discord.Forbidden) as exc:
        await message.add_reaction("🎉")
    assert exc.value.code == 50013


async def test_removing_others_reactions_and_clearing_need_manage_messages(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    message = await channel.send("vote")
    for emoji in ("👍", "🎉", "👀"):
        emu.react(world.alice, message.id, emoji)
    alice = discord.Object(world.alice.id)

    await message.remove_reaction("👍", alice)
    await message.clear_reaction("🎉")
    assert list(emu.message(message.id).reactions) == ["👀"]
    await message.clear_reactions()
    assert emu.message(message.id).reactions == {}

    emu.react(world.alice, message.id, "👍")
    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.MANAGE_MESSAGES)
    for attempt in (
        message.remove_reaction("👍", alice),
        message.clear_reaction("👍"),
        message.clear_reactions(),
    ):
        with pytest.raises(discord.Forbidden) as exc:
            await attempt
        assert exc.value.code == 50013
    assert emu.message(message.id).reactions == {"👍": [world.alice.id]}


async def test_at_most_20_different_emojis_on_a_message(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    message = await channel.send("vote")
    for i in range(20):
        emu.react(world.alice, message.id, chr(0x1F600 + i))
    with pytest.raises(discord.HTTPException) as exc:
        await message.add_reaction(chr(0x1F600 + 20))
    assert (exc.value.status, exc.value.code) == (400, 30010)
    await message.add_reaction(chr(0x1F600))  # an emoji already there is fine
    assert len(emu.message(message.id).reactions) == 20


async def test_no_reactions_in_an_archived_thread(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(name="work", type=discord.ChannelType.public_thread)
    message = await thread.send("done")
    emu.edit_thread(thread.id, archived=True)
    with pytest.raises(discord.HTTPException) as exc:
        await message.add_reaction("👍")
    assert (exc.value.status, exc.value.code) == (400, 50083)
    assert emu.message(message.id).reactions == {}


async def test_reaction_events_reach_the_bot(emu: Emulator, world: World) -> None:
    added: list[tuple[int, str, int | None]] = []
    removed: list[str] = []
    with_intent = make_bot()

    @with_intent.event
    async def on_raw_reaction_add(event: discord.RawReactionActionEvent) -> None:
        member = event.member.id if event.member is not None else None
        added.append((event.user_id, str(event.emoji), member))

    @with_intent.event
    async def on_raw_reaction_remove(event: discord.RawReactionActionEvent) -> None:
        removed.append(str(event.emoji))

    async with running_bot(emu, with_intent) as bot:
        message = await text_channel(bot, world.channel.id).send("vote")
        emu.react(world.alice, message.id, "🎉")
        emu.unreact(world.alice, message.id, "🎉")
        await emu.wait_until(lambda: added and removed, 5)
    assert added == [(world.alice.id, "🎉", world.alice.id)]
    assert removed == ["🎉"]


async def test_no_reaction_events_without_the_reactions_intent(emu: Emulator, world: World) -> None:
    intents = discord.Intents.default()
    intents.reactions = False
    intents.message_content = True
    without = commands.Bot(command_prefix="!", intents=intents, guild_ready_timeout=0.05)
    heard: list[str] = []
    seen: list[str] = []

    @without.event
    async def on_raw_reaction_add(event: discord.RawReactionActionEvent) -> None:
        heard.append(str(event.emoji))

    @without.event
    async def on_message(message: discord.Message) -> None:
        seen.append(message.content)

    async with running_bot(emu, without) as bot:
        message = await text_channel(bot, world.channel.id).send("vote again")
        emu.react(world.alice, message.id, "👀")
        # Dispatches arrive in order: once a later message is seen, the reaction would have been.
        emu.send_message(world.alice, world.channel, "after")
        await emu.wait_until(lambda: "after" in seen, 5)
    assert heard == []
