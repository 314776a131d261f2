"""Threads as Discord documents them (topics/threads, resources/channel): who is a member and how
the bot hears of it, what List Active Guild Threads answers, what counts as activity, the events
and system messages of starting, renaming and adding to a thread, and who may edit one. Each
test drives the real discord.py client."""

from __future__ import annotations

from typing import Any

import discord
import pytest
from discord.ext import commands

from discord_emulator import DEFAULT_BOT_PERMISSIONS, Emulator, permissions
from discord_emulator.models import NEWS
from discord_emulator.testing import running_bot

from .conftest import World, make_bot


def text_channel(bot: commands.Bot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


def dispatched(emu: Emulator, *events: str) -> list[tuple[str, dict[str, Any]]]:
    """The gateway events sent so far, of the given names, in order."""
    return [
        (str(e.extra["event"]), e.data)
        for e in emu.events.log
        if e.kind == "gateway_dispatch" and e.extra.get("event") in events
    ]


async def live_thread(bot: commands.Bot, emu: Emulator, thread_id: int) -> discord.Thread:
    """discord.py's current Thread object (it replaces it on some events)."""
    thread = await emu.wait_until(lambda: bot.get_channel(thread_id))
    assert isinstance(thread, discord.Thread)
    return thread


async def test_the_bot_hears_each_time_it_becomes_a_thread_member(
    world: World, running: commands.Bot
) -> None:
    """ "A Thread Members Update Gateway Event is always sent when the current user is added to
    or removed from a thread": when it starts one, posts in one, or joins one (a member's join
    included), so discord.py's Thread.me is set each time."""
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    started = await channel.create_thread(name="mine", type=discord.ChannelType.public_thread)
    await emu.wait_until(lambda: getattr(running.get_channel(started.id), "me", None))

    others = emu.actions.create_thread(world.channel, world.alice.id, "alice's")
    theirs = await live_thread(running, emu, others.id)
    assert theirs.me is None
    await theirs.send("joining by posting")
    await emu.wait_until(lambda: getattr(running.get_channel(others.id), "me", None))

    await started.leave()
    await emu.wait_until(lambda: emu.bot_user.id not in emu.channel(started.id).thread_member_ids)
    count = len(dispatched(emu, "THREAD_MEMBERS_UPDATE"))
    await started.join()
    await started.join()  # already a member: Join Thread still fires its events
    joins = dispatched(emu, "THREAD_MEMBERS_UPDATE")[count:]
    assert [d["added_members"][0]["user_id"] for _, d in joins] == [str(emu.bot_user.id)] * 2
    me = (await live_thread(running, emu, started.id)).me
    assert me is not None
    assert me.id == emu.bot_user.id


async def test_list_active_guild_threads_names_the_threads_the_bot_joined(
    emu: Emulator, world: World
) -> None:
    """The active threads the bot can see, newest first, with a thread member object for each
    one it joined (discord.py adds it to the thread's members)."""
    hidden = emu.create_channel(world.guild, "staff")
    emu.set_overwrite(hidden, emu.bot_user, deny=permissions.VIEW_CHANNEL)
    joined = emu.actions.create_thread(world.channel, world.alice.id, "joined")
    emu.join_thread(emu.bot_user, joined)
    apart = emu.actions.create_thread(world.channel, world.alice.id, "apart")
    emu.actions.create_thread(hidden, world.alice.id, "out of sight")
    archived = emu.actions.create_thread(world.channel, world.alice.id, "archived")
    emu.edit_thread(archived, archived=True)
    async with running_bot(emu, make_bot()) as bot:
        raw = await bot.http.get_active_threads(world.guild.id)
        guild = bot.get_guild(world.guild.id)
        assert guild is not None
        threads = await guild.active_threads()
    assert [int(t["id"]) for t in raw["threads"]] == [apart.id, joined.id]
    assert [(int(m["id"]), int(m["user_id"])) for m in raw["members"]] == [
        (joined.id, emu.bot_user.id)
    ]
    members = {t.id: [m.id for m in t.members] for t in threads}
    assert members == {apart.id: [], joined.id: [emu.bot_user.id]}


async def test_changing_auto_archive_duration_counts_as_activity(
    world: World, running: commands.Bot
) -> None:
    """Changing the auto-archive time is activity: the 60 minutes run from the change, and the
    archive_timestamp moves to it."""
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(
        name="quiet", type=discord.ChannelType.public_thread, auto_archive_duration=1440
    )
    meta = emu.channel(thread.id).thread
    assert meta is not None
    created = meta.archive_timestamp
    emu.advance(50 * 60)
    thread = await thread.edit(auto_archive_duration=60)
    changed = emu.clock.time()
    assert meta.archive_timestamp > created + 49 * 60
    assert abs(meta.archive_timestamp - changed) < 5
    assert abs(thread.archive_timestamp.timestamp() - meta.archive_timestamp) < 0.001
    emu.advance(30 * 60)  # 80 minutes after it started, 30 after the change
    assert not meta.archived
    emu.advance(31 * 60)
    assert meta.archived


async def test_start_thread_from_message_fires_thread_create_and_message_update(
    world: World, running: commands.Bot
) -> None:
    """The starter message is updated (it now has its thread and the HAS_THREAD flag); the
    thread opens with a THREAD_STARTER_MESSAGE that refers to it and does not count as one of
    the thread's messages."""
    emu = world.emu
    edits: list[discord.RawMessageUpdateEvent] = []
    starters: list[discord.Message] = []

    async def on_raw_message_edit(payload: discord.RawMessageUpdateEvent) -> None:
        edits.append(payload)

    async def on_message(message: discord.Message) -> None:
        if message.type is discord.MessageType.thread_starter_message:
            starters.append(message)

    running.add_listener(on_raw_message_edit)
    running.add_listener(on_message)
    channel = text_channel(running, world.channel.id)
    posted = await channel.send("let's talk about it")
    before = len(emu.events.log)
    thread = await posted.create_thread(name="about it")
    await emu.wait_until(lambda: edits and starters)
    order = [
        (e.extra["event"], e.data.get("type"))
        for e in list(emu.events.log)[before:]
        if e.kind == "gateway_dispatch"
        and e.extra["event"] in ("THREAD_CREATE", "MESSAGE_UPDATE", "MESSAGE_CREATE")
    ]
    assert order == [("THREAD_CREATE", 11), ("MESSAGE_UPDATE", 0), ("MESSAGE_CREATE", 21)]
    (edit,) = edits
    assert (edit.message_id, edit.data["thread"]["id"]) == (posted.id, str(thread.id))
    assert int(edit.data["flags"]) & (1 << 5)  # HAS_THREAD
    (starter,) = starters
    assert starter.channel.id == thread.id
    assert starter.reference is not None
    assert starter.reference.message_id == posted.id
    assert starter.system_content == "let's talk about it"  # discord.py shows the starter's text
    assert emu.channel(thread.id).message_count == 0
    await thread.send("first reply")
    assert emu.channel(thread.id).message_count == 1


async def test_a_public_thread_on_an_older_message_is_announced_in_the_channel(
    world: World, running: commands.Bot
) -> None:
    """THREAD_CREATED (type 18) goes to the parent channel when a public thread starts from an
    older message or from none; its content is the thread's name, its reference the thread."""
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    fresh = await channel.send("fresh")
    await fresh.create_thread(name="on a fresh message")
    older = await channel.send("older")
    emu.advance(emu.config.thread_created_notice_age + 1)
    on_older = await older.create_thread(name="on an older message")
    bare = await channel.create_thread(name="on no message", type=discord.ChannelType.public_thread)
    await channel.create_thread(name="private", type=discord.ChannelType.private_thread)
    notices = [m for m in emu.history(world.channel) if m.type == 18]
    assert [(m.content, m.author_id) for m in notices] == [
        ("on an older message", emu.bot_user.id),
        ("on no message", emu.bot_user.id),
    ]
    assert notices[0].message_reference == {
        "type": 0,
        "channel_id": str(on_older.id),
        "guild_id": str(world.guild.id),
    }
    assert notices[1].message_reference is not None
    assert notices[1].message_reference["channel_id"] == str(bare.id)
    # discord.py reads them as thread_created messages
    fetched = await channel.fetch_message(notices[0].id)
    assert fetched.type is discord.MessageType.thread_created


async def test_renaming_and_adding_members_post_system_messages_in_the_thread(
    world: World, running: commands.Bot
) -> None:
    """CHANNEL_NAME_CHANGE (4) when the name changes; RECIPIENT_ADD (1) and RECIPIENT_REMOVE (2)
    when a user is added to or removed from the thread by someone else, not by themselves."""
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(name="draft", type=discord.ChannelType.private_thread)
    thread = await thread.edit(name="final")
    thread = await thread.edit(name="final")  # unchanged: no message
    await thread.add_user(discord.Object(world.alice.id))
    await thread.add_user(discord.Object(world.alice.id))  # already a member: nothing
    await thread.remove_user(discord.Object(world.alice.id))
    bob = emu.create_user("bob")
    emu.add_member(world.guild, bob)
    emu.join_thread(bob, thread.id)  # by himself
    system = [(m.type, m.author_id, m.content, m.mention_ids) for m in emu.history(thread.id)]
    bot = emu.bot_user.id
    assert system == [
        (4, bot, "final", []),
        (1, bot, "", [world.alice.id]),
        (2, bot, "", [world.alice.id]),
    ]
    fetched = [m async for m in thread.history(oldest_first=True)]
    assert [m.type for m in fetched] == [
        discord.MessageType.channel_name_change,
        discord.MessageType.recipient_add,
        discord.MessageType.recipient_remove,
    ]


async def test_member_count_stops_counting_at_50(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(name="crowd", type=discord.ChannelType.public_thread)
    for n in range(55):
        user = emu.create_user(f"user{n}")
        emu.add_member(world.guild, user)
        emu.join_thread(user, thread.id)
    assert len(emu.channel(thread.id).thread_member_ids) == 56
    fetched = await running.fetch_channel(thread.id)
    assert isinstance(fetched, discord.Thread)
    assert fetched.member_count == 50


async def test_who_may_edit_a_thread(emu: Emulator, world: World) -> None:
    """Without Manage Threads, the creator may rename its thread but not change its slowmode;
    setting archived to false needs only being a member (not Send Messages in Threads)."""
    guild = emu.create_guild(
        "No manage", bot_permissions=DEFAULT_BOT_PERMISSIONS & ~permissions.MANAGE_THREADS
    )
    chan = emu.create_channel(guild, "general")
    alice = emu.create_user("alice")
    emu.add_member(guild, alice)
    async with running_bot(emu, make_bot()) as bot:
        channel = text_channel(bot, chan.id)
        mine = await channel.create_thread(name="mine", type=discord.ChannelType.public_thread)
        mine = await mine.edit(name="still mine")
        with pytest.raises(discord.Forbidden) as exc:
            await mine.edit(slowmode_delay=30)
        assert exc.value.code == 50013
        joined = emu.actions.create_thread(chan, alice.id, "joined")
        emu.join_thread(emu.bot_user, joined)
        apart = emu.actions.create_thread(chan, alice.id, "apart")
        for thread in (joined, apart):
            emu.edit_thread(thread, archived=True)
        emu.set_overwrite(chan, emu.bot_user, deny=permissions.SEND_MESSAGES_IN_THREADS)
        await bot.http.edit_channel(joined.id, archived=False)
        with pytest.raises(discord.Forbidden):
            await bot.http.edit_channel(apart.id, archived=False)
    assert joined.thread is not None
    assert not joined.thread.archived
    assert apart.thread is not None
    assert apart.thread.archived


async def test_a_thread_on_an_announcement_message_is_an_announcement_thread(
    emu: Emulator, world: World
) -> None:
    news = emu.create_channel(world.guild, "news", type=NEWS)
    async with running_bot(emu, make_bot()) as bot:
        channel = bot.get_channel(news.id)
        assert isinstance(channel, discord.TextChannel)
        posted = await channel.send("we shipped")
        thread = await posted.create_thread(name="about the release")
    assert thread.type is discord.ChannelType.news_thread
    assert emu.channel(thread.id).type == 10
