"""Rate limits and REST faults: bucket headers, 429 bodies and headers (with ``Via``),
discord.py retrying after ``retry_after``, the old-message edit sub-limit (30046), the global
limit, 5xx answers and latency."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator, EmulatorConfig, Limit, RateLimitConfig

from .conftest import World


def auth(emu: Emulator) -> dict[str, str]:
    assert emu.application is not None
    return {"Authorization": f"Bot {emu.application.token}"}


@pytest.fixture
async def real_time_emu() -> Any:
    """Discord's real windows (no time scaling): requests are made faster than they reset."""
    async with Emulator(EmulatorConfig()) as emulator:
        emulator.create_application()
        yield emulator


def _text_channel(world: World, running: commands.Bot) -> discord.TextChannel:
    """The world's text channel as the running bot sees it."""
    channel = running.get_channel(world.channel.id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_bucket_headers_and_429_shape(real_time_emu: Emulator) -> None:
    emu = real_time_emu
    guild = emu.create_guild()
    channel = emu.create_channel(guild, "general")
    url = f"{emu.api_base}/channels/{channel.id}/messages"
    async with aiohttp.ClientSession() as session:
        for i in range(5):
            async with session.post(url, json={"content": f"m{i}"}, headers=auth(emu)) as resp:
                assert resp.status == 200
                assert resp.headers["X-RateLimit-Limit"] == "5"
                assert resp.headers["X-RateLimit-Remaining"] == str(4 - i)
                assert float(resp.headers["X-RateLimit-Reset-After"]) <= 5.0
                assert "X-RateLimit-Bucket" in resp.headers
                assert "X-RateLimit-Reset" in resp.headers
        async with session.post(url, json={"content": "m5"}, headers=auth(emu)) as resp:
            assert resp.status == 429
            assert resp.headers["Via"] == "1.1 google"
            assert resp.headers["X-RateLimit-Scope"] == "user"
            assert resp.headers["X-RateLimit-Remaining"] == "0"
            assert "Retry-After" in resp.headers
            body = await resp.json()
        assert body["message"] == "You are being rate limited."
        assert body["global"] is False
        assert 0 < body["retry_after"] <= 5.0
        # Buckets are per channel: another channel is unaffected.
        other = emu.create_channel(guild, "other")
        async with session.post(
            f"{emu.api_base}/channels/{other.id}/messages", json={"content": "x"}, headers=auth(emu)
        ) as resp:
            assert resp.status == 200


async def test_old_message_edit_limit_raw(real_time_emu: Emulator) -> None:
    emu = real_time_emu
    guild = emu.create_guild()
    channel = emu.create_channel(guild, "general")
    async with aiohttp.ClientSession() as session:
        base = f"{emu.api_base}/channels/{channel.id}/messages"
        async with session.post(base, json={"content": "old"}, headers=auth(emu)) as resp:
            mid = (await resp.json())["id"]
        emu.advance(2 * 3600)
        statuses = []
        for i in range(4):
            async with session.patch(
                f"{base}/{mid}", json={"content": f"e{i}"}, headers=auth(emu)
            ) as resp:
                statuses.append(resp.status)
                body = await resp.json()
                via = resp.headers.get("Via")
    assert statuses == [200, 200, 200, 429]
    assert body["code"] == 30046
    assert (
        body["message"]
        == "Maximum number of edits to messages older than 1 hour reached. Try again later."
    )
    assert body["retry_after"] > 0
    assert via == "1.1 google"


async def test_discord_py_waits_out_old_message_edit_limit(
    world: World, running: commands.Bot
) -> None:
    emu, channel = world.emu, _text_channel(world, running)
    msg = await channel.send("v0")
    emu.advance(2 * 3600)
    for i in range(1, 5):
        msg = await msg.edit(content=f"v{i}")
    assert msg.content == "v4"
    limited = [r for r in emu.request_log(status=429) if r.code == 30046]
    assert len(limited) == 1  # the 4th edit hit the sub-limit and discord.py retried it
    assert [v.content for v in emu.message(msg.id).versions] == ["v0", "v1", "v2", "v3", "v4"]


async def test_discord_py_retries_a_429_storm(world: World, running: commands.Bot) -> None:
    emu, channel = world.emu, _text_channel(world, running)
    emu.faults.ratelimit_next(3, retry_after=0.05, path_contains="/messages", method="POST")
    msg = await channel.send("through the storm")
    assert msg.content == "through the storm"
    statuses = [
        r.status for r in emu.request_log(path_contains=f"/channels/{world.channel.id}/messages")
    ]
    assert statuses == [429, 429, 429, 200]


async def test_edit_bucket_is_respected_without_429(world: World, running: commands.Bot) -> None:
    emu, channel = world.emu, _text_channel(world, running)
    msg = await channel.send("0")
    for i in range(1, 12):  # > 5 edits per (scaled) 5 s window: discord.py waits from headers
        msg = await msg.edit(content=str(i))
    assert emu.request_log(status=429) == []
    assert len(emu.message(msg.id).versions) == 12


async def test_global_limit() -> None:
    config = EmulatorConfig(ratelimits=RateLimitConfig(global_limit=Limit(3, 10.0)))
    async with Emulator(config) as emu:
        emu.create_application()
        async with aiohttp.ClientSession() as session:
            statuses = []
            for _ in range(4):
                async with session.get(f"{emu.api_base}/users/@me", headers=auth(emu)) as resp:
                    statuses.append(resp.status)
                    headers = resp.headers
                    body = await resp.json()
    assert statuses == [200, 200, 200, 429]
    assert body["global"] is True
    assert headers["X-RateLimit-Global"] == "true"
    assert headers["X-RateLimit-Scope"] == "global"
    assert headers["Via"] == "1.1 google"


async def test_server_errors_and_latency(world: World, running: commands.Bot) -> None:
    emu, channel = world.emu, _text_channel(world, running)
    emu.faults.fail_next(503, path_contains="/messages", method="POST")
    with pytest.raises(discord.DiscordServerError) as exc:
        await channel.send("during an outage")
    assert exc.value.status == 503
    emu.faults.fail_next(500, path_contains="/messages", method="POST")
    msg = await channel.send("after one 500")  # discord.py retries 500 after 1 s
    assert msg.content == "after one 500"
    emu.faults.add_latency(0.2)
    start = time.perf_counter()
    await channel.send("slow")
    assert time.perf_counter() - start >= 0.2
    emu.faults.clear()


async def test_a_held_answer_waits_for_its_release_and_only_the_matching_one(
    world: World, running: commands.Bot
) -> None:
    emu, channel = world.emu, _text_channel(world, running)
    hold = emu.faults.hold_next(path_contains=f"/channels/{channel.id}/messages", method="POST")
    held = asyncio.create_task(channel.send("held"))
    await asyncio.wait_for(hold.arrived.wait(), 5)
    await running.fetch_channel(channel.id)  # another route goes through meanwhile
    await asyncio.sleep(0.1)
    assert not held.done()
    assert [m.content for m in emu.history(channel.id)] == ["held"]  # handled, answer held
    hold.release()
    msg = await asyncio.wait_for(held, 5)
    assert [m.id for m in emu.history(channel.id)] == [msg.id]  # the answer is that message
    assert (await channel.send("not held")).content == "not held"  # a hold is used up


async def test_a_dropped_connection_reaches_discord_py_as_server_disconnected(
    world: World, running: commands.Bot
) -> None:
    emu, channel = world.emu, _text_channel(world, running)
    emu.faults.disconnect_next(path_contains="/messages", method="POST")
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await channel.send("dropped")
    assert emu.history(channel.id) == []
    assert (await channel.send("next")).content == "next"  # one request dropped, not the route


async def test_retry_after_header_is_whole_seconds_and_body_is_precise(
    world: World, running: commands.Bot
) -> None:
    emu = world.emu
    emu.faults.ratelimit_next(1, retry_after=0.05, path_contains="/messages", method="POST")
    url = f"{emu.api_base}/channels/{world.channel.id}/messages"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json={"content": "x"}, headers=auth(emu)) as resp,
    ):
        assert resp.status == 429
        assert resp.headers["Retry-After"] == "1"
        body = await resp.json()
    assert body["retry_after"] == 0.05
    # discord.py waits the body's precise value, not the rounded header.
    emu.faults.ratelimit_next(1, retry_after=0.05, path_contains="/messages", method="POST")
    channel = running.get_channel(world.channel.id)
    assert isinstance(channel, discord.TextChannel)
    started = time.monotonic()
    await channel.send("after a short wait")
    assert time.monotonic() - started < 0.9
    assert len(emu.request_log(path_contains="/messages", status=429)) == 2
