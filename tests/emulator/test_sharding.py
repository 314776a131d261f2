"""Sharding as Discord does it, checked with discord.py's own AutoShardedClient: /gateway/bot
recommends shards and reports the session start limit; guild events go to shard
``(guild_id >> 22) % num_shards`` and DMs to shard 0; bad shards close with 4010 and too many
guilds on one shard with 4011; IDENTIFY is paced per max_concurrency bucket."""

from __future__ import annotations

import asyncio

import aiohttp
import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator
from discord_emulator.gateway_sessions import shard_id_of
from discord_emulator.testing import fast_config, running_bot

from .conftest import World


def sharded_bot(**kwargs: object) -> commands.AutoShardedBot:
    intents = discord.Intents.default()
    intents.message_content = True
    bot = commands.AutoShardedBot(
        command_prefix="!", intents=intents, guild_ready_timeout=0.05, **kwargs
    )

    async def paced(shard_id: int | None, *, initial: bool = False) -> None:
        # discord.py waits 5 s between IDENTIFYs; the test emulator's window is 50 ms.
        if not initial:
            await asyncio.sleep(0.06)

    bot.before_identify_hook = paced  # type: ignore[method-assign]
    return bot


async def test_gateway_bot_recommends_one_shard_per_thousand_guilds(emu: Emulator) -> None:
    app = emu.application or emu.create_application()
    emu.config.guilds_per_recommended_shard = 2
    for n in range(5):
        emu.create_guild(f"g{n}")
    async with aiohttp.ClientSession() as http:
        resp = await http.get(
            f"{emu.api_base}/gateway/bot", headers={"Authorization": f"Bot {app.token}"}
        )
        body = await resp.json()
    assert body["shards"] == 3  # ceil(5 guilds / 2 per shard)
    limit = body["session_start_limit"]
    assert limit["max_concurrency"] == 1
    assert limit["total"] == 1000
    assert limit["remaining"] == 1000
    assert limit["reset_after"] > 0


async def test_guild_events_reach_only_their_shard_and_dms_only_shard_zero(
    emu: Emulator, world: World
) -> None:
    guilds = {s: emu.create_guild(f"shard{s}", shard=(s, 2)) for s in (0, 1)}
    channels = {s: emu.create_channel(g, f"general-{s}") for s, g in guilds.items()}
    for g in guilds.values():
        emu.add_member(g, world.alice)
    bot = sharded_bot(shard_count=2)
    seen: list[tuple[int | None, str]] = []

    async def on_message(message: discord.Message) -> None:
        seen.append((message.guild.shard_id if message.guild else 0, message.content))

    bot.add_listener(on_message)
    shard_of_event: dict[str, list[str]] = {}
    async with running_bot(emu, bot):
        assert sorted(bot.shards) == [0, 1]
        for s in (0, 1):
            assert guilds[s].id in {g.id for g in bot.guilds}
            assert bot.get_guild(guilds[s].id).shard_id == s  # type: ignore[union-attr]
        emu.send_message(world.alice, channels[0], "to shard 0")
        emu.send_message(world.alice, channels[1], "to shard 1")
        dm = emu.create_dm(world.alice)
        emu.send_message(world.alice, dm, "a dm")
        await emu.wait_until(lambda: len(seen) == 3, 5)
        sessions = {s.session_id: s.shard for s in emu.gateway.sessions.values()}
    # Which session each MESSAGE_CREATE went to, from the emulator's own dispatch log.
    for event in emu.events.log:
        if event.kind == "gateway_dispatch" and event.extra.get("event") == "MESSAGE_CREATE":
            shard_of_event.setdefault(event.data["content"], []).append(event.extra["session_id"])
    assert sorted(c for _, c in seen) == ["a dm", "to shard 0", "to shard 1"]
    # each message was dispatched to exactly one session
    assert all(len(v) == 1 for v in shard_of_event.values()), shard_of_event
    assert sessions[shard_of_event["to shard 0"][0]] == (0, 2)
    assert sessions[shard_of_event["to shard 1"][0]] == (1, 2)
    assert sessions[shard_of_event["a dm"][0]] == (0, 2)
    assert shard_id_of(guilds[1].id, 2) == 1


@pytest.mark.parametrize("shard", [[2, 2], [-1, 2], [0, 0], ["0", 1], [0]])
async def test_identify_with_an_invalid_shard_closes_4010(
    emu: Emulator, world: World, shard: list[object]
) -> None:
    app = emu.application or emu.create_application()
    async with aiohttp.ClientSession() as http, http.ws_connect(emu.gateway_url) as ws:
        hello = await ws.receive_json()
        assert hello["op"] == 10
        await ws.send_json(
            {"op": 2, "d": {"token": app.token, "intents": 513, "properties": {}, "shard": shard}}
        )
        msg = await ws.receive()
        assert msg.type == aiohttp.WSMsgType.CLOSE
        assert ws.close_code == 4010


async def test_too_many_guilds_on_one_shard_closes_4011_and_discordpy_reports_it(
    emu: Emulator, world: World
) -> None:
    emu.config.max_guilds_per_shard = 1
    emu.create_guild("second", shard=(0, 1))
    bot = sharded_bot(shard_count=1)
    with pytest.raises(discord.errors.ConnectionClosed) as caught:
        async with running_bot(emu, bot, ready_timeout=5):
            pass
    assert caught.value.code == 4011


async def test_enough_shards_connect_when_one_shard_would_hold_too_many(
    emu: Emulator, world: World
) -> None:
    emu.config.max_guilds_per_shard = 1
    emu.create_guild("other", shard=(1 - shard_id_of(world.guild.id, 2), 2))
    bot = sharded_bot(shard_count=2)
    async with running_bot(emu, bot):
        assert len(bot.guilds) == 2


async def test_identify_is_paced_per_max_concurrency_bucket() -> None:
    config = fast_config(identify_interval=0.5)
    async with Emulator(config) as emu:
        emu.create_application()
        emu.create_guild("g")
        # Two shards in one bucket (max_concurrency 1) identifying at once: the second is
        # refused with op 9, and discord.py identifies again later.
        eager = sharded_bot(shard_count=2)

        async def eager_hook(shard_id: int | None, *, initial: bool = False) -> None:
            return None

        eager.before_identify_hook = eager_hook  # type: ignore[method-assign]
        async with running_bot(emu, eager, ready_timeout=20):
            assert sorted(eager.shards) == [0, 1]
        refused = [e for e in emu.events.log if e.kind == "gateway_identify_refused"]
        assert refused, "a second IDENTIFY in one bucket within the window was accepted"

    config = fast_config(identify_interval=0.5, max_concurrency=2)
    async with Emulator(config) as emu:
        emu.create_application()
        emu.create_guild("g")
        # With max_concurrency 2, shards 0 and 1 are in different buckets: both at once is fine.
        eager = sharded_bot(shard_count=2)
        eager.before_identify_hook = eager_hook  # type: ignore[method-assign]
        async with running_bot(emu, eager, ready_timeout=20):
            assert sorted(eager.shards) == [0, 1]
        assert not [e for e in emu.events.log if e.kind == "gateway_identify_refused"]
