from __future__ import annotations

from discord.ext import commands

from .conftest import BotRecorder, World


async def test_ping(world: World, running: commands.Bot, recorder: BotRecorder) -> None:
    emu = world.emu
    handle = await emu.invoke_slash(world.alice, world.channel, "ping")
    msg = await handle.wait_original()
    assert msg.content == "pong"
    h2 = await emu.invoke_slash(world.alice, world.channel, "job status", {"id": "X"})
    m2 = await h2.wait_original()
    assert m2.content == "job X: running"
    assert m2.ephemeral
    assert recorder.seen == [("status", "X")]
