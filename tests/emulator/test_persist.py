"""The world saved as JSON and loaded into a new emulator: same ids, token, commands, threads
and message versions, so a bot restarted against it keeps working on its old messages."""

from __future__ import annotations

import json
from pathlib import Path

import discord
from discord.ext import commands

from discord_emulator import Emulator
from discord_emulator.persist import WorldFile, dump_world, load_world
from discord_emulator.testing import fast_config, make_world, running_bot

from .conftest import make_bot


def synced_bot() -> commands.Bot:
    bot = make_bot()

    @bot.tree.command(name="ping", description="Answer pong")
    async def ping(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("pong")

    async def setup_hook() -> None:
        await bot.tree.sync()

    bot.setup_hook = setup_hook  # type: ignore[method-assign]
    return bot


async def test_a_reloaded_world_keeps_ids_token_commands_threads_and_versions(
    tmp_path: Path,
) -> None:
    """Save after a bot has worked, load into a fresh emulator on the same port, and a bot with
    the saved token edits its old message; every version of it is kept and new ids are newer."""
    path = tmp_path / "world.json"
    first = Emulator(fast_config())
    saved = WorldFile(first, path)
    assert saved.load() is False
    world = make_world(first)
    async with first:
        await saved.start()
        async with running_bot(first, synced_bot()) as bot:
            channel = bot.get_channel(world.channel.id)
            assert isinstance(channel, discord.TextChannel)
            sent = await channel.send("step 1")
            await sent.edit(content="step 2")
            await sent.create_thread(name="job 1")
            handle = await first.invoke_slash(world.alice, world.channel, "ping")
            await handle.wait_original()
        await saved.stop()
        port = first.port
    assert first.application is not None
    token = first.application.token

    second = Emulator(fast_config(port=port))
    assert WorldFile(second, path).load() is True
    assert second.application is not None
    assert token == second.application.token
    assert [c["name"] for c in second.application.global_commands] == ["ping"]
    [thread] = second.threads(world.channel.id)
    assert (sent.id, "job 1") == (thread.id, thread.name)
    async with second, running_bot(second, make_bot()) as bot:
        channel = bot.get_channel(world.channel.id)
        assert isinstance(channel, discord.TextChannel)
        message = await channel.fetch_message(sent.id)
        await message.edit(content="step 3")
        later = await channel.send("after the restart")
    versions = [v.content for v in second.message(sent.id).versions]
    assert versions == ["step 1", "step 2", "step 3"]
    assert later.id > max(second.state.messages.keys() - {later.id})
    contents = [m.content for m in second.history(world.channel)]
    assert [contents[0], contents[1], contents[-1]] == ["step 3", "pong", "after the restart"]


def test_dump_is_json_and_load_is_its_inverse() -> None:
    """dump -> JSON -> load -> dump gives the same data."""
    emu = Emulator(fast_config())
    world = make_world(emu)
    emu.create_forum(world.guild, "reports")
    emu.create_dm(world.alice)
    emu.send_message(world.alice, world.channel, "hello")
    data = json.loads(json.dumps(dump_world(emu)))
    copy = Emulator(fast_config())
    load_world(copy, data)
    assert data == json.loads(json.dumps(dump_world(copy)))
