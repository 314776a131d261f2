"""The control surface: HTTP API under /_emulator/, event subscription, snowflakes from the
virtual clock, the permission algorithm, and replies."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import time

import aiohttp
import discord
from discord.ext import commands

from discord_emulator import Emulator, InteractionHandle, permissions
from discord_emulator.permissions import channel_permissions
from discord_emulator.testing import running_bot

from .conftest import World, make_bot


async def test_http_control_api(world: World, running: commands.Bot) -> None:
    emu = world.emu
    base = f"{emu.base_url}/_emulator"
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{base}/users", json={"username": "bob"}) as resp:
            bob = await resp.json()
        async with session.post(
            f"{base}/guilds/{world.guild.id}/members", json={"user_id": bob["id"]}
        ) as resp:
            assert resp.status == 200
        async with session.post(
            f"{base}/interactions",
            json={"user_id": bob["id"], "channel_id": str(world.channel.id), "command": "ping"},
        ) as resp:
            interaction_id = (await resp.json())["interaction_id"]
        inter = emu.state.interactions[int(interaction_id)]
        await emu.wait_until(lambda: inter.original_message_id, 5)
        async with session.get(f"{base}/interactions/{interaction_id}") as resp:
            status = await resp.json()
        assert status["response_type"] == 4
        assert status["original"]["content"] == "pong"
        async with session.post(
            f"{base}/channels/{world.channel.id}/messages",
            json={"user_id": bob["id"], "content": "hi"},
        ) as resp:
            assert (await resp.json())["content"] == "hi"
        async with session.get(f"{base}/channels/{world.channel.id}/history") as resp:
            history = await resp.json()
        assert [m["content"] for m in history] == ["pong", "hi"]
        assert history[0]["versions"][0]["content"] == "pong"
        async with session.post(f"{base}/clock/advance", json={"seconds": 3600}) as resp:
            assert resp.status == 200
        async with session.post(
            f"{base}/interactions",
            json={"user_id": bob["id"], "channel_id": str(world.channel.id), "command": "nope"},
        ) as resp:
            assert resp.status == 400
        async with session.get(f"{base}/state") as resp:
            state = await resp.json()
        assert state["guilds"][0]["name"] == "Test Guild"


async def test_event_subscription_over_python_and_websocket(world: World) -> None:
    emu = world.emu
    sub = emu.subscribe()
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(f"{emu.base_url}/_emulator/events")
        await asyncio.sleep(0.05)  # let the server register the subscription
        msg = emu.send_message(world.alice, world.channel, "watch me")
        event = await sub.get(timeout=5)
        assert event.kind == "message_create"
        assert event.data["id"] == str(msg.id)
        streamed = await ws.receive_json(timeout=5)
        assert streamed["kind"] == "message_create"
        assert streamed["data"]["content"] == "watch me"
        await ws.close()
    sub.close()
    waiter = asyncio.create_task(emu.wait_for(lambda ev: ev.kind == "message_update", timeout=5))
    await asyncio.sleep(0)
    emu.actions.edit_message(msg, {"content": "edited"})
    assert (await waiter).data["content"] == "edited"
    found = await emu.wait_for_message(world.channel, lambda m: m.content == "edited", timeout=1)
    assert found.id == msg.id


async def test_stopping_closes_open_event_streams_at_once() -> None:
    """An event stream still open (the sandbox's page) is closed as the emulator stops, with
    "going away", instead of holding the stop for the server's shutdown timeout (1 s) and
    then being cut."""
    emu = await Emulator().start()
    try:
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(f"{emu.base_url}/_emulator/events")
            await asyncio.sleep(0.05)  # let the server register the stream
            started = time.monotonic()
            await emu.stop()
            took = time.monotonic() - started
            closing = await ws.receive(timeout=5)
    finally:
        await emu.stop()
    assert closing.type == aiohttp.WSMsgType.CLOSE
    assert closing.data == aiohttp.WSCloseCode.GOING_AWAY
    assert took < 0.5


def test_snowflakes_follow_the_virtual_clock(emu: Emulator) -> None:
    first = emu.state.new_id()
    created = discord.utils.snowflake_time(first)
    assert abs((created - dt.datetime.now(dt.UTC)).total_seconds()) < 2
    emu.advance(86400)
    later = emu.state.new_id()
    assert later > first
    assert (discord.utils.snowflake_time(later) - created).total_seconds() >= 86399


def test_permission_algorithm(emu: Emulator) -> None:
    guild = emu.create_guild(
        "Perms", everyone_permissions=permissions.VIEW_CHANNEL | permissions.SEND_MESSAGES
    )
    carol = emu.create_user("carol")
    mod = emu.create_role(guild, "mod", permissions.MANAGE_THREADS)
    admin = emu.create_role(guild, "admin", permissions.ADMINISTRATOR)
    emu.add_member(guild, carol, roles=[mod])
    channel = emu.create_channel(guild, "c")
    state = emu.state

    def perms() -> int:
        return channel_permissions(state, channel, carol.id)

    assert permissions.has(perms(), permissions.SEND_MESSAGES | permissions.MANAGE_THREADS)
    emu.set_overwrite(channel, guild, deny=permissions.SEND_MESSAGES)  # @everyone overwrite
    assert not perms() & permissions.SEND_MESSAGES
    emu.set_overwrite(
        channel, mod, allow=permissions.SEND_MESSAGES
    )  # role allow beats @everyone deny
    assert perms() & permissions.SEND_MESSAGES
    emu.set_overwrite(channel, carol, deny=permissions.VIEW_CHANNEL)  # no view: nothing at all
    assert perms() == 0
    state.guilds[guild.id].members[carol.id].roles.append(admin.id)
    assert perms() == permissions.ALL  # administrator ignores overwrites
    assert channel_permissions(state, channel, guild.owner_id) == permissions.ALL


async def test_replies_reference_their_message(world: World, running: commands.Bot) -> None:
    channel = running.get_channel(world.channel.id)
    assert isinstance(channel, discord.TextChannel)
    question = world.emu.send_message(world.alice, world.channel, "question?")
    fetched = await channel.fetch_message(question.id)
    answer = await fetched.reply("answer")
    assert answer.type is discord.MessageType.reply
    assert answer.reference is not None
    assert answer.reference.message_id == question.id


async def test_http_control_edits_deletes_and_context_menus(emu: Emulator, world: World) -> None:
    bot = make_bot()

    @bot.tree.context_menu(name="Poke")
    async def poke(interaction: discord.Interaction, member: discord.Member) -> None:
        await interaction.response.send_message(f"poked {member.name}")

    @bot.tree.context_menu(name="Quote")
    async def quote(interaction: discord.Interaction, message: discord.Message) -> None:
        await interaction.response.send_message(f"> {message.content}")

    async def setup_hook() -> None:
        await bot.tree.sync()

    bot.setup_hook = setup_hook  # type: ignore[method-assign]
    base = f"{emu.base_url}/_emulator"
    alice, channel = world.alice.id, world.channel.id
    async with running_bot(emu, bot), aiohttp.ClientSession() as http:
        said = emu.send_message(world.alice, world.channel, "helo")
        path = f"{base}/channels/{channel}/messages/{said.id}"
        async with http.patch(path, json={"user_id": str(alice), "content": "hello"}) as resp:
            assert (resp.status, (await resp.json())["content"]) == (200, "hello")
        owner = world.guild.owner_id
        async with http.patch(path, json={"user_id": str(owner), "content": "x"}) as resp:
            assert resp.status == 403  # only the author edits a message
        handles = []
        for body in (
            {"type": 2, "command": "Poke", "channel_id": str(channel), "target_id": str(alice)},
            {"type": 3, "command": "Quote", "target_id": str(said.id)},
        ):
            async with http.post(f"{base}/interactions", json={"user_id": alice, **body}) as resp:
                interaction_id = int((await resp.json())["interaction_id"])
            handles.append(InteractionHandle(emu, emu.state.interactions[interaction_id]))
        answers = [(await h.wait_original()).content for h in handles]
        async with http.delete(path, params={"user_id": str(alice)}) as resp:
            assert resp.status == 204
    assert answers == ["poked alice", "> hello"]
    assert said.deleted
    assert [h.interaction.data["target_id"] for h in handles] == [str(alice), str(said.id)]


async def test_http_control_submits_a_modal_with_an_attached_file(
    emu: Emulator, world: World
) -> None:
    """``POST /_emulator/modals`` submits the modal the bot opened: text as a string, a file
    upload's files as ``{filename, content_type, data}`` (base64); what Discord's client would
    refuse (an empty required input, bad base64) is a 400 and reaches no bot."""
    bot = make_bot()
    seen: list[tuple[str, str, int]] = []

    class Evidence(discord.ui.Modal, title="Evidence"):
        note = discord.ui.Label(text="Note", component=discord.ui.TextInput(custom_id="note"))
        files = discord.ui.Label(
            text="Screenshot", component=discord.ui.FileUpload(custom_id="shot")
        )

        async def on_submit(self, interaction: discord.Interaction) -> None:
            assert isinstance(self.note.component, discord.ui.TextInput)
            assert isinstance(self.files.component, discord.ui.FileUpload)
            (shot,) = self.files.component.values
            data = await shot.read()
            seen.append((self.note.component.value, shot.filename, len(data)))
            await interaction.response.send_message("filed", ephemeral=True)

    @bot.tree.command(name="evidence", description="Attach evidence")
    async def evidence(interaction: discord.Interaction) -> None:
        await interaction.response.send_modal(Evidence())

    async def setup_hook() -> None:
        await bot.tree.sync()

    bot.setup_hook = setup_hook  # type: ignore[method-assign]
    base = f"{emu.base_url}/_emulator"
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 100
    shot = {"filename": "crash.png", "content_type": "image/png"}
    async with running_bot(emu, bot), aiohttp.ClientSession() as http:
        opened = await emu.invoke_slash(world.alice, world.channel, "evidence")
        await opened.wait_response()

        async def submit(values: dict[str, object]) -> tuple[int, dict[str, str]]:
            body = {"user_id": str(world.alice.id), "interaction_id": str(opened.id)}
            async with http.post(f"{base}/modals", json={**body, "values": values}) as resp:
                return resp.status, await resp.json()

        encoded = base64.b64encode(png).decode()
        missing, _ = await submit({"shot": [{**shot, "data": encoded}]})  # no note
        garbled, _ = await submit({"note": "x", "shot": [{**shot, "data": "not base64!"}]})
        status, answer = await submit({"note": "it crashed", "shot": [{**shot, "data": encoded}]})
        assert (missing, garbled, status) == (400, 400, 200)
        handle = InteractionHandle(emu, emu.state.interactions[int(answer["interaction_id"])])
        reply = await handle.wait_original()
    assert (reply.content, reply.ephemeral) == ("filed", True)
    assert seen == [("it crashed", "crash.png", len(png))]
