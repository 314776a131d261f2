"""Gateway: resume with replay after a dropped socket, op 7, op 9, heartbeats, bad tokens,
privileged intents and an emulator restart."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator, EmulatorConfig
from discord_emulator.testing import running_bot

from .conftest import World, make_bot


class Recorder:
    def __init__(self, bot: commands.Bot) -> None:
        self.messages: list[str] = []
        self.ready = 0
        self.resumed = 0
        bot.add_listener(self.on_message)
        bot.add_listener(self.on_ready)
        bot.add_listener(self.on_resumed)

    async def on_message(self, message: discord.Message) -> None:
        self.messages.append(message.content)

    async def on_ready(self) -> None:
        self.ready += 1

    async def on_resumed(self) -> None:
        self.resumed += 1


async def test_dropped_connection_resumes_without_missing_dispatches(
    emu: Emulator, world: World, plain_bot: commands.Bot
) -> None:
    rec = Recorder(plain_bot)
    async with running_bot(emu, plain_bot):
        emu.send_message(world.alice, world.channel, "before")
        await emu.wait_until(lambda: rec.messages == ["before"], 5)
        assert emu.drop_gateway() == 1
        # Sent while the bot has no socket: buffered and replayed on RESUME.
        emu.send_message(world.alice, world.channel, "while away 1")
        emu.send_message(world.alice, world.channel, "while away 2")
        await emu.wait_until(lambda: len(rec.messages) == 3, 5)
        await emu.wait_until(lambda: rec.resumed == 1, 5)
        handle = await emu.invoke_slash(world.alice, world.channel, "ping")
        assert (await handle.wait_original()).content == "pong"
    assert rec.messages[:3] == ["before", "while away 1", "while away 2"]
    assert rec.ready == 1  # resumed, not re-identified
    assert any(e.kind == "gateway_resumed" for e in emu.events.log)


async def test_op7_reconnect_and_op9_invalid_session(emu: Emulator, world: World) -> None:
    bot = make_bot()
    rec = Recorder(bot)

    async def no_identify_delay(shard_id: int | None, *, initial: bool = False) -> None:
        # discord.py waits 5 s before every non-initial IDENTIFY (identify rate limit).
        return None

    bot.before_identify_hook = no_identify_delay  # type: ignore[method-assign]
    async with running_bot(emu, bot):
        emu.send_reconnect()
        await emu.wait_until(lambda: rec.resumed == 1, 5)
        emu.invalidate_sessions(resumable=False)
        await emu.wait_until(lambda: rec.ready == 2, 10)  # identified again: new READY
        emu.send_message(world.alice, world.channel, "after re-identify")
        await emu.wait_until(lambda: rec.messages == ["after re-identify"], 5)


async def test_restart_keeps_state_and_the_bot_resumes(emu: Emulator, world: World) -> None:
    bot = make_bot()
    rec = Recorder(bot)
    async with running_bot(emu, bot):
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel)
        first = await channel.send("before restart")
        await emu.restart()
        await emu.wait_until(lambda: rec.resumed == 1, 10)
        fetched = await channel.fetch_message(first.id)
        assert fetched.content == "before restart"
        emu.send_message(world.alice, world.channel, "after restart")
        await emu.wait_until(lambda: "after restart" in rec.messages, 5)


async def _raw_gateway(
    emu: Emulator, session: aiohttp.ClientSession
) -> aiohttp.ClientWebSocketResponse:
    ws = await session.ws_connect(emu.gateway_url + "?v=10&encoding=json")
    hello = json.loads((await ws.receive(timeout=5)).data)
    assert hello["op"] == 10
    return ws


async def test_missed_heartbeat_closes_the_socket() -> None:
    async with Emulator(EmulatorConfig(heartbeat_interval_ms=100)) as emu:
        emu.create_application()
        async with aiohttp.ClientSession() as session:
            ws = await _raw_gateway(emu, session)
            await ws.send_json({"op": 1, "d": None})
            ack = json.loads((await ws.receive(timeout=5)).data)
            assert ack["op"] == 11
            msg = await ws.receive(timeout=5)  # no more heartbeats: the gateway gives up
            assert msg.type == aiohttp.WSMsgType.CLOSE
            assert ws.close_code == 4009
            await ws.close()


async def test_bad_token_and_sequence_numbers(emu: Emulator, world: World) -> None:
    async with aiohttp.ClientSession() as session:
        ws = await _raw_gateway(emu, session)
        await ws.send_json({"op": 2, "d": {"token": "nope", "intents": 513, "properties": {}}})
        msg = await ws.receive(timeout=5)
        assert msg.type == aiohttp.WSMsgType.CLOSE
        assert ws.close_code == 4004
        await ws.close()
        assert emu.application is not None
        ws = await _raw_gateway(emu, session)
        await ws.send_json(
            {"op": 2, "d": {"token": emu.application.token, "intents": 513, "properties": {}}}
        )
        ready = json.loads((await ws.receive(timeout=5)).data)
        guild_create = json.loads((await ws.receive(timeout=5)).data)
        assert (ready["t"], ready["s"]) == ("READY", 1)
        assert ready["d"]["guilds"] == [{"id": str(world.guild.id), "unavailable": True}]
        assert ready["d"]["resume_gateway_url"] == emu.gateway_url
        assert (guild_create["t"], guild_create["s"]) == ("GUILD_CREATE", 2)
        assert [c["name"] for c in guild_create["d"]["channels"]] == ["general"]
        await ws.close()

    bad = make_bot()
    with pytest.raises(discord.LoginFailure):
        async with running_bot(emu, bad, token="not-a-token"):
            pass


async def test_privileged_intents_must_be_enabled(world: World) -> None:
    emu = world.emu
    app = emu.create_application("Other", privileged_intents=False)
    emu.add_member(world.guild, app.bot_user_id)
    bot = make_bot()  # asks for message_content
    with pytest.raises(discord.PrivilegedIntentsRequired):
        async with running_bot(emu, bot, token=app.token):
            await asyncio.sleep(0)
