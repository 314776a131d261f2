"""The rest of the REST and gateway surface a bot uses, checked against Discord's docs: nonces,
component custom ids, components v2, request size, replies to system messages, edits and
deletes of other users' messages, command definitions and contexts, member lists and queries,
member roles, follow-ups, Modify Channel on threads, guild lists, DMs that cannot be sent,
thread members and archived threads, integration owners, the gateway's send limit. Each test
drives the real discord.py client."""

from __future__ import annotations

import io
import json
from typing import Any

import aiohttp
import discord
import pytest
from discord import app_commands
from discord.ext import commands

from discord_emulator import Emulator, InteractionRefused, intents, permissions
from discord_emulator.models import MSG_THREAD_CREATED
from discord_emulator.testing import running_bot
from discord_emulator.validation import MAX_UPLOAD_BYTES

from .conftest import World, make_bot


def text_channel(bot: commands.Bot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_a_nonce_longer_than_25_characters_is_refused(
    world: World, running: commands.Bot
) -> None:
    channel = text_channel(running, world.channel.id)
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("hello", nonce="n" * 26)
    assert (exc.value.status, exc.value.code) == (400, 50035)
    assert "nonce" in exc.value.text
    sent = await channel.send("hello", nonce="n" * 25)
    assert sent.nonce == "n" * 25


async def test_two_components_with_one_custom_id_are_refused(
    world: World, running: commands.Bot
) -> None:
    channel = text_channel(running, world.channel.id)
    view = discord.ui.View()
    view.add_item(discord.ui.Button(label="Yes", custom_id="answer"))
    view.add_item(discord.ui.Button(label="No", custom_id="answer"))
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("sure?", view=view)
    assert (exc.value.status, exc.value.code) == (400, 50035)
    assert "components.0.components.1.custom_id" in exc.value.text
    assert "cannot be duplicated" in exc.value.text
    assert not [m for m in world.emu.history(world.channel) if m.content == "sure?"]


async def test_files_over_25_mib_in_total_are_refused(world: World, running: commands.Bot) -> None:
    channel = text_channel(running, world.channel.id)
    # Each file is under the 10 MiB per-file limit; together they pass the 25 MiB request limit.
    size = MAX_UPLOAD_BYTES - 1024
    files = [discord.File(io.BytesIO(b"x" * size), filename=f"part{i}.bin") for i in range(3)]
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("parts", files=files)
    assert (exc.value.status, exc.value.code) == (413, 40005)
    two = [discord.File(io.BytesIO(b"x" * size), filename=f"part{i}.bin") for i in range(2)]
    sent = await channel.send("parts", files=two)
    assert len(sent.attachments) == 2


async def test_replying_to_a_system_message_is_refused(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    await channel.create_thread(name="standup", type=discord.ChannelType.public_thread)
    system = next(m for m in emu.history(world.channel) if m.type == MSG_THREAD_CREATED)
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("re", reference=channel.get_partial_message(system.id))
    assert (exc.value.status, exc.value.code) == (400, 50035)
    assert "Cannot reply to a system message" in exc.value.text
    ordinary = await channel.send("ordinary")
    reply = await channel.send("re", reference=ordinary)
    assert reply.reference is not None
    assert reply.reference.message_id == ordinary.id


async def test_a_bot_edits_only_the_flags_of_another_users_message_with_manage_messages(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    bob = emu.create_user("bob")
    emu.add_member(world.guild, bob)
    channel = text_channel(running, world.channel.id)
    posted = emu.send_message(world.alice, world.channel, f"see <@{bob.id}> https://example.org")
    message = await channel.fetch_message(posted.id)

    suppressed = await message.edit(suppress=True)
    assert suppressed.flags.suppress_embeds
    # Only a content edit re-parses mentions: bob is still mentioned.
    assert [u.id for u in suppressed.mentions] == [bob.id]
    assert emu.message(posted.id).content == f"see <@{bob.id}> https://example.org"

    with pytest.raises(discord.Forbidden) as exc:
        await message.edit(content="changed")
    assert exc.value.code == 50005
    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.MANAGE_MESSAGES)
    with pytest.raises(discord.Forbidden) as exc:
        await message.edit(suppress=False)
    assert exc.value.code == 50013
    assert emu.message(posted.id).flags & (1 << 2)


async def test_command_definitions_are_checked_on_sync(
    emu: Emulator, world: World, running: commands.Bot
) -> None:
    app_id = running.application_id
    assert app_id is not None

    async def put(commands_: list[dict[str, Any]]) -> discord.HTTPException:
        with pytest.raises(discord.HTTPException) as exc:
            await running.http.bulk_upsert_guild_commands(app_id, world.guild.id, commands_)
        return exc.value

    def option(name: str, required: bool = False, **extra: Any) -> dict[str, Any]:
        return {"type": 3, "name": name, "description": "d", "required": required, **extra}

    long_description = await put([{"name": "run", "description": "d" * 101, "type": 1}])
    assert long_description.code == 50035
    assert "0.description" in long_description.text
    upper = await put([{"name": "Run", "description": "d", "type": 1}])
    assert "Command name is invalid" in upper.text
    order = await put(
        [{"name": "run", "description": "d", "options": [option("a"), option("b", True)]}]
    )
    assert "Required options must be placed before non-required options" in order.text
    too_long = await put(
        [{"name": "run", "description": "d", "options": [option("task", max_length=6001)]}]
    )
    assert "0.options.0.max_length" in too_long.text
    many = [{"name": str(i), "value": str(i)} for i in range(26)]
    choices = await put(
        [{"name": "run", "description": "d", "options": [option("pick", choices=many)]}]
    )
    assert "0.options.0.choices" in choices.text
    # Nothing was stored by the refused syncs; a valid definition is accepted.
    assert world.guild.id not in emu.application.guild_commands
    ok = await running.http.bulk_upsert_guild_commands(
        app_id,
        world.guild.id,
        [{"name": "run", "description": "d", "options": [option("a", True), option("b")]}],
    )
    assert [c["name"] for c in ok] == ["run"]


async def test_a_guild_only_command_is_not_offered_in_a_dm(emu: Emulator, world: World) -> None:
    bot = make_bot()
    ran: list[str] = []

    @bot.tree.command(name="here", description="Anywhere")
    async def here(interaction: discord.Interaction) -> None:
        ran.append("here")
        await interaction.response.send_message("ok")

    @bot.tree.command(name="server", description="Servers only")
    @app_commands.guild_only()
    async def server(interaction: discord.Interaction) -> None:
        ran.append("server")
        await interaction.response.send_message("ok")

    async def setup_hook() -> None:
        await bot.tree.sync()

    bot.setup_hook = setup_hook  # type: ignore[method-assign]
    async with running_bot(emu, bot):
        dm = emu.create_dm(world.alice)
        with pytest.raises(InteractionRefused):
            await emu.invoke_slash(world.alice, dm, "server")
        await (await emu.invoke_slash(world.alice, dm, "here")).wait_original()
        await (await emu.invoke_slash(world.alice, world.channel, "server")).wait_original()
    assert ran == ["here", "server"]


async def test_listing_members_needs_the_members_intent_enabled(
    emu: Emulator, world: World
) -> None:
    emu.application.privileged_intents = 0
    bot = commands.Bot(
        command_prefix="!", intents=discord.Intents.default(), guild_ready_timeout=0.05
    )
    async with running_bot(emu, bot):
        # Straight through discord.py's HTTP client: Guild.fetch_members already refuses
        # without Intents.members, but Discord checks the application's portal setting.
        with pytest.raises(discord.Forbidden) as exc:
            await bot.http.get_members(world.guild.id, 10, None)
        assert exc.value.code == 50001
        emu.application.privileged_intents = intents.GUILD_MEMBERS
        listed = await bot.http.get_members(world.guild.id, 10, None)
        assert world.alice.id in {int(m["user"]["id"]) for m in listed}
        with pytest.raises(discord.HTTPException) as bad:
            await bot.http.get_members(world.guild.id, 1001, None)
        assert (bad.value.status, bad.value.code) == (400, 50035)


async def test_query_members_answers_only_the_matching_members(emu: Emulator, world: World) -> None:
    albert = emu.create_user("albert")
    bob = emu.create_user("bob")
    emu.add_member(world.guild, albert)
    emu.add_member(world.guild, bob)
    async with running_bot(emu, make_bot()) as bot:
        guild = bot.get_guild(world.guild.id)
        assert guild is not None
        by_prefix = await guild.query_members(query="al", limit=10)
        assert sorted(m.name for m in by_prefix) == ["albert", "alice"]
        by_id = await guild.query_members(user_ids=[bob.id])
        assert [m.id for m in by_id] == [bob.id]
        first = await guild.query_members(query="al", limit=1)
        assert len(first) == 1


async def test_more_than_120_gateway_frames_a_minute_close_the_connection_with_4008(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    closed = emu.wait_for(
        lambda ev: ev.kind == "gateway_disconnect" and ev.data.get("code") == 4008, 5
    )
    # Around discord.py's own limiter (it keeps under 120), straight onto its socket.
    socket = running.ws.socket
    for _ in range(125):
        if socket.closed:
            break
        await socket.send_str(json.dumps({"op": 1, "d": None}))
    assert (await closed).data["code"] == 4008
    # discord.py treats 4008 as resumable and carries on.
    await emu.wait_for(lambda ev: ev.kind == "gateway_resumed", 10)
    channel = text_channel(running, world.channel.id)
    assert (await channel.send("still here")).content == "still here"


async def test_a_follow_up_always_answers_the_message(world: World, running: commands.Bot) -> None:
    emu = world.emu
    handle = await emu.invoke_slash(world.alice, world.channel, "ping")
    await handle.wait_original()
    url = f"{emu.api_base}/webhooks/{emu.application.id}/{handle.interaction.token}"
    # No ?wait=true: "wait is always true" for interaction follow-ups.
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json={"content": "more"}) as resp,
    ):
        assert resp.status == 200
        body = await resp.json()
    assert body["content"] == "more"
    assert emu.message(int(body["id"])).content == "more"


async def test_fetching_history_with_limit_zero_is_refused(
    world: World, running: commands.Bot
) -> None:
    with pytest.raises(discord.HTTPException) as exc:
        await running.http.logs_from(world.channel.id, 0)
    assert (exc.value.status, exc.value.code) == (400, 50035)
    assert "greater than or equal to 1" in exc.value.text


async def test_an_archived_thread_changes_only_when_the_request_unarchives_it(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(name="work", type=discord.ChannelType.public_thread)
    await thread.edit(archived=True)
    with pytest.raises(discord.HTTPException) as exc:
        await thread.edit(name="renamed")
    assert (exc.value.status, exc.value.code) == (400, 50083)
    assert emu.channel(thread.id).name == "work"
    renamed = await thread.edit(archived=False, name="renamed")
    assert renamed.name == "renamed"
    assert not renamed.archived


async def test_modify_channel_checks_name_duration_and_slowmode(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(name="work", type=discord.ChannelType.public_thread)
    for changes, field in (
        ({"name": "n" * 101}, "name"),
        ({"auto_archive_duration": 30}, "auto_archive_duration"),
        ({"rate_limit_per_user": 21601}, "rate_limit_per_user"),
    ):
        with pytest.raises(discord.HTTPException) as exc:
            await running.http.edit_channel(thread.id, **changes)
        assert (exc.value.status, exc.value.code) == (400, 50035)
        assert field in exc.value.text
    stored = emu.channel(thread.id)
    assert stored.name == "work"
    assert stored.thread is not None
    assert stored.thread.auto_archive_duration == 1440
    assert stored.rate_limit_per_user == 0


async def test_fetch_guilds_lists_the_bots_guilds(emu: Emulator, world: World) -> None:
    other = emu.create_guild("Other")
    emu.create_guild("Without the bot", bot_permissions=None)
    async with running_bot(emu, make_bot()) as bot:
        guilds = [g async for g in bot.fetch_guilds(limit=None)]
        assert sorted(g.id for g in guilds) == sorted([world.guild.id, other.id])
        first = [g async for g in bot.fetch_guilds(limit=1)]
        assert [g.id for g in first] == [min(world.guild.id, other.id)]
        mine = next(g for g in guilds if g.id == world.guild.id)
        assert mine.name == world.guild.name


async def test_a_dm_to_a_user_who_cannot_be_messaged_fails_with_50007(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    alice = await running.fetch_user(world.alice.id)
    assert (await alice.send("hello")).content == "hello"
    emu.set_accepts_dms(world.alice, False)
    with pytest.raises(discord.Forbidden) as exc:
        await alice.send("again")
    assert exc.value.code == 50007
    stranger = await running.fetch_user(emu.create_user("stranger").id)  # shares no server
    with pytest.raises(discord.Forbidden) as exc:
        await stranger.send("hello")
    assert exc.value.code == 50007
    assert [m.content for m in emu.history(emu.create_dm(world.alice))] == ["hello"]


async def test_thread_members_can_be_read(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    thread = await channel.create_thread(name="work", type=discord.ChannelType.public_thread)
    emu.join_thread(world.alice, thread.id)
    members = await thread.fetch_members()
    assert sorted(m.id for m in members) == sorted([emu.bot_user.id, world.alice.id])
    assert (await thread.fetch_member(world.alice.id)).id == world.alice.id
    bob = emu.create_user("bob")
    emu.add_member(world.guild, bob)
    with pytest.raises(discord.NotFound) as exc:
        await thread.fetch_member(bob.id)
    assert exc.value.code == 10007
    emu.application.privileged_intents = 0
    with pytest.raises(discord.Forbidden) as denied:
        await thread.fetch_members()
    assert denied.value.code == 50001


async def test_archived_threads_can_be_listed(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world.channel.id)
    old = await channel.create_thread(name="old", type=discord.ChannelType.public_thread)
    active = await channel.create_thread(name="active", type=discord.ChannelType.public_thread)
    private = await channel.create_thread(name="secret", type=discord.ChannelType.private_thread)
    emu.edit_thread(old.id, archived=True)
    emu.edit_thread(private.id, archived=True)

    public = [t.id async for t in channel.archived_threads()]
    assert public == [old.id]
    assert active.id not in public
    assert [t.id async for t in channel.archived_threads(private=True)] == [private.id]
    joined = [t.id async for t in channel.archived_threads(private=True, joined=True)]
    assert joined == [private.id]

    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.MANAGE_THREADS)
    with pytest.raises(discord.Forbidden) as exc:
        [t async for t in channel.archived_threads(private=True)]
    assert exc.value.code == 50013


async def test_a_dm_interaction_names_the_guild_install_with_zero(
    emu: Emulator, world: World
) -> None:
    owners: list[dict[str, str]] = []
    bot = make_bot(enable_debug_events=True)

    @bot.tree.command(name="here", description="Anywhere")
    async def here(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("ok")

    @bot.event
    async def on_socket_raw_receive(raw: str) -> None:
        frame = json.loads(raw)
        if frame.get("t") == "INTERACTION_CREATE":
            owners.append(frame["d"]["authorizing_integration_owners"])

    async def setup_hook() -> None:
        await bot.tree.sync()

    bot.setup_hook = setup_hook  # type: ignore[method-assign]
    async with running_bot(emu, bot):
        dm = emu.create_dm(world.alice)
        in_dm = await (await emu.invoke_slash(world.alice, dm, "here")).wait_original()
        await (await emu.invoke_slash(world.alice, world.channel, "here")).wait_original()
        await emu.wait_until(lambda: len(owners) == 2, 5)
        response = await bot.http.get_message(dm.id, in_dm.id)
    # Receiving and Responding, Authorizing Integration Owners Object: for GUILD_INSTALL ("0")
    # the guild's id, or "0" when triggered from a DM with the app's bot user.
    assert owners == [{"0": "0"}, {"0": str(world.guild.id)}]
    assert response["interaction_metadata"]["authorizing_integration_owners"] == {"0": "0"}


async def test_unarchiving_a_thread_sends_its_members_thread_member_update(
    emu: Emulator, world: World
) -> None:
    frames: list[tuple[str, dict[str, Any]]] = []
    bot = make_bot(enable_debug_events=True)

    @bot.event
    async def on_socket_raw_receive(raw: str) -> None:
        frame = json.loads(raw)
        if frame.get("t") in ("THREAD_UPDATE", "THREAD_MEMBER_UPDATE"):
            frames.append((frame["t"], frame["d"]))

    async with running_bot(emu, bot):
        channel = text_channel(bot, world.channel.id)
        mine = await channel.create_thread(name="mine", type=discord.ChannelType.public_thread)
        other = emu.actions.create_thread(world.channel, world.alice.id, "not mine")
        for thread_id in (mine.id, other.id):
            emu.edit_thread(thread_id, archived=True)
            emu.edit_thread(thread_id, archived=False)
        await emu.wait_until(lambda: len(frames) == 5, 5)
    kinds = [(kind, int(data["id"])) for kind, data in frames]
    # THREAD_UPDATE (archive), THREAD_UPDATE (unarchive) then THREAD_MEMBER_UPDATE for the
    # thread the bot is in; only the two THREAD_UPDATEs for the other.
    assert kinds == [
        ("THREAD_UPDATE", mine.id),
        ("THREAD_UPDATE", mine.id),
        ("THREAD_MEMBER_UPDATE", mine.id),
        ("THREAD_UPDATE", other.id),
        ("THREAD_UPDATE", other.id),
    ]
    member = frames[2][1]
    assert member["user_id"] == str(emu.bot_user.id)
    assert member["guild_id"] == str(world.guild.id)


async def test_a_components_v2_message_takes_no_content_or_embeds(
    world: World, running: commands.Bot
) -> None:
    channel = text_channel(running, world.channel.id)
    layout = discord.ui.LayoutView()
    layout.add_item(discord.ui.TextDisplay("All text lives in components"))
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("and some content", view=layout)
    assert (exc.value.status, exc.value.code) == (400, 50035)
    assert "'content' field cannot be used" in exc.value.text

    sent = await channel.send(view=layout)
    assert sent.flags.components_v2
    with pytest.raises(discord.HTTPException) as exc:
        await sent.edit(embed=discord.Embed(title="legacy"))
    assert exc.value.code == 50035
    assert "'embeds' field cannot be used" in exc.value.text
    assert world.emu.message(sent.id).embeds == []


async def test_a_components_v2_message_holds_up_to_40_components(
    world: World, running: commands.Bot
) -> None:
    channel = text_channel(running, world.channel.id)
    layout = discord.ui.LayoutView()
    for i in range(6):  # more than the 5 top-level rows of a classic message
        layout.add_item(discord.ui.TextDisplay(f"line {i}"))
    sent = await channel.send(view=layout)
    assert len(world.emu.message(sent.id).components) == 6

    flags = discord.MessageFlags(components_v2=True)
    with discord.http.handle_message_parameters(flags=flags) as params:
        params.payload["components"] = [{"type": 10, "content": str(i)} for i in range(41)]
        with pytest.raises(discord.HTTPException) as exc:
            await running.http.send_message(channel.id, params=params)
    assert (exc.value.status, exc.value.code) == (400, 50035)


async def test_a_thread_the_bot_is_in_carries_its_thread_member(
    emu: Emulator, world: World
) -> None:
    joined = emu.actions.create_thread(world.channel, world.alice.id, "joined")
    emu.join_thread(emu.bot_user, joined)
    apart = emu.actions.create_thread(world.channel, world.alice.id, "apart")
    async with running_bot(emu, make_bot()) as bot:
        # From GUILD_CREATE (threads the bot is in carry its member) ...
        cached = bot.get_channel(joined.id)
        assert isinstance(cached, discord.Thread)
        assert cached.me is not None
        other = bot.get_channel(apart.id)
        assert isinstance(other, discord.Thread)
        assert other.me is None
        # ... and from Get Channel.
        fetched = await bot.fetch_channel(joined.id)
        assert isinstance(fetched, discord.Thread)
        assert fetched.me is not None
        assert fetched.me.id == emu.bot_user.id
        fetched_other = await bot.fetch_channel(apart.id)
        assert isinstance(fetched_other, discord.Thread)
        assert fetched_other.me is None


async def test_another_users_message_in_a_dm_cannot_be_deleted(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    dm = emu.create_dm(world.alice)
    theirs = emu.send_message(world.alice, dm, "hi bot")
    channel = await (await running.fetch_user(world.alice.id)).create_dm()
    with pytest.raises(discord.HTTPException) as exc:
        await channel.get_partial_message(theirs.id).delete()
    assert (exc.value.status, exc.value.code) == (400, 50003)
    assert not emu.message(theirs.id).deleted
    mine = await channel.send("hello")
    await mine.delete()
    assert emu.message(mine.id).deleted


async def test_a_bot_grants_only_roles_below_its_highest_with_manage_roles(
    emu: Emulator, world: World
) -> None:
    member_role = emu.create_role(world.guild, "member")
    emu.create_role(world.guild, "mods", permissions.MANAGE_ROLES, members=[emu.bot_user])
    admins = emu.create_role(world.guild, "admins")  # above the bot's highest role
    updates: list[list[int]] = []
    intents = discord.Intents.default()
    intents.members = True
    intents.message_content = True
    bot = commands.Bot(command_prefix="!", intents=intents, guild_ready_timeout=0.05)

    @bot.event
    async def on_member_update(before: discord.Member, after: discord.Member) -> None:
        updates.append([r.id for r in after.roles if not r.is_default()])

    async with running_bot(emu, bot):
        guild = bot.get_guild(world.guild.id)
        assert guild is not None
        alice = await guild.fetch_member(world.alice.id)
        await alice.add_roles(discord.Object(member_role.id))
        stored = emu.state.member(world.guild.id, world.alice.id)
        assert stored is not None
        assert stored.roles == [member_role.id]
        with pytest.raises(discord.Forbidden) as exc:
            await alice.add_roles(discord.Object(admins.id))
        assert exc.value.code == 50013
        with pytest.raises(discord.NotFound) as missing:
            await alice.add_roles(discord.Object(12345))
        assert missing.value.code == 10011
        await alice.remove_roles(discord.Object(member_role.id))
        assert stored.roles == []
        await emu.wait_until(lambda: len(updates) == 2, 5)
    assert updates == [[member_role.id], []]
