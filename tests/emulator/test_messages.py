"""Messages through discord.py: limits (50035 bodies), empty messages (50006), nonces,
attachments, permissions (50001/50013), authorship (50005), unknown ids (10003/10008)."""

from __future__ import annotations

import io

import aiohttp
import discord
import pytest
from discord.ext import commands

from discord_emulator import Emulator, permissions
from discord_emulator.testing import running_bot

from .conftest import World, make_bot


def text_channel(bot: commands.Bot, world: World) -> discord.TextChannel:
    channel = bot.get_channel(world.channel.id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_content_over_2000_is_invalid_form_body(world: World, running: commands.Bot) -> None:
    channel = text_channel(running, world)
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("x" * 2001)
    assert exc.value.status == 400
    assert exc.value.code == 50035
    assert "In content: Must be 2000 or fewer in length." in exc.value.text
    assert world.emu.requests[-1].body == {
        "code": 50035,
        "errors": {
            "content": {
                "_errors": [
                    {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}
                ]
            }
        },
        "message": "Invalid Form Body",
    }
    ok = await channel.send("x" * 2000)
    assert len(ok.content) == 2000


async def test_embed_limits(world: World, running: commands.Bot) -> None:
    channel = text_channel(running, world)
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send(embed=discord.Embed(title="t" * 257))
    assert exc.value.code == 50035
    assert "In embeds.0.title: Must be 256 or fewer in length." in exc.value.text

    embed = discord.Embed(title="fields")
    for i in range(26):
        embed.add_field(name=f"f{i}", value="v")
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send(embed=embed)
    assert "In embeds.0.fields: Must be 25 or fewer in length." in exc.value.text

    big = [discord.Embed(description="d" * 4000), discord.Embed(description="d" * 2001)]
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send(embeds=big)
    assert "Embed size exceeds maximum size of 6000" in exc.value.text


async def test_component_limits(world: World, running: commands.Bot) -> None:
    channel = text_channel(running, world)
    view = discord.ui.View()
    view.add_item(discord.ui.Button(label="ok", custom_id="c" * 101))
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("buttons", view=view)
    assert exc.value.code == 50035
    assert "components.0.components.0.custom_id: Must be 100 or fewer in length." in exc.value.text


async def test_more_than_ten_embeds_and_six_rows_raw(emu: Emulator, world: World) -> None:
    app = emu.application
    assert app is not None
    headers = {"Authorization": f"Bot {app.token}"}
    url = f"{emu.api_base}/channels/{world.channel.id}/messages"
    async with aiohttp.ClientSession() as session:
        async with session.post(
            url, json={"embeds": [{"title": "t"}] * 11}, headers=headers
        ) as resp:
            assert resp.status == 400
            body = await resp.json()
        assert body["errors"] == {
            "embeds": {
                "_errors": [
                    {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 10 or fewer in length."}
                ]
            }
        }
        row = {"type": 1, "components": [{"type": 2, "style": 1, "label": "b", "custom_id": "b"}]}
        async with session.post(
            url, json={"content": "x", "components": [row] * 6}, headers=headers
        ) as resp:
            body = await resp.json()
        assert body["errors"]["components"]["_errors"][0]["code"] == "BASE_TYPE_BAD_LENGTH"
        async with session.get(url, headers={}) as resp:
            assert resp.status == 401
            assert await resp.json() == {"message": "401: Unauthorized", "code": 0}


async def test_empty_message(world: World, running: commands.Bot) -> None:
    channel = text_channel(running, world)
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send()
    assert exc.value.status == 400
    assert exc.value.code == 50006
    assert exc.value.text == "Cannot send an empty message"


async def test_enforced_nonce_returns_the_existing_message(
    world: World, running: commands.Bot
) -> None:
    channel = text_channel(running, world)
    first = await channel.send("once", nonce=12345)
    second = await channel.send("once", nonce=12345)
    assert first.id == second.id
    assert [m.content for m in world.emu.history(world.channel)] == ["once"]
    world.emu.advance(301)  # past the "few minutes" window, the nonce no longer deduplicates
    third = await channel.send("once", nonce=12345)
    assert third.id != first.id


async def test_attachments_edit_list_and_delete(world: World, running: commands.Bot) -> None:
    channel = text_channel(running, world)
    msg = await channel.send("report", file=discord.File(io.BytesIO(b"hello"), "report.txt"))
    assert msg.attachments[0].filename == "report.txt"
    assert msg.attachments[0].size == 5
    assert await msg.attachments[0].read() == b"hello"
    edited = await msg.edit(content="report v2")
    assert edited.attachments[0].filename == "report.txt"  # kept across the edit
    await channel.send("second")
    contents = [m.content async for m in channel.history(limit=10)]
    assert contents == ["second", "report v2"]
    await msg.delete()
    with pytest.raises(discord.NotFound) as exc:
        await channel.fetch_message(msg.id)
    assert exc.value.code == 10008
    stored = world.emu.message(msg.id)
    assert stored.deleted
    assert [v.content for v in stored.versions] == ["report", "report v2"]


async def test_unknown_ids_and_other_authors(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world)
    with pytest.raises(discord.NotFound) as exc:
        await running.fetch_channel(123456789012345678)
    assert exc.value.code == 10003
    with pytest.raises(discord.NotFound) as exc:
        await channel.fetch_message(123456789012345678)
    assert exc.value.code == 10008
    theirs = emu.send_message(world.alice, world.channel, "alice speaks")
    fetched = await channel.fetch_message(theirs.id)
    with pytest.raises(discord.Forbidden) as exc:
        await fetched.edit(content="bot rewrites")
    assert exc.value.code == 50005


async def test_missing_permissions(world: World, running: commands.Bot) -> None:
    emu = world.emu
    channel = text_channel(running, world)
    bot_role = next(r for r in world.guild.roles.values() if r.managed)
    emu.set_overwrite(world.channel, bot_role, deny=permissions.SEND_MESSAGES)
    emu.set_overwrite(world.channel, world.guild, deny=permissions.SEND_MESSAGES)
    with pytest.raises(discord.Forbidden) as exc:
        await channel.send("nope")
    assert exc.value.code == 50013
    assert exc.value.text == "Missing Permissions"
    # A member overwrite beats role overwrites (Permissions docs, overwrite order).
    emu.set_overwrite(world.channel, emu.bot_user, allow=permissions.SEND_MESSAGES)
    await channel.send("allowed again")
    emu.set_overwrite(world.channel, emu.bot_user, deny=permissions.VIEW_CHANNEL)
    with pytest.raises(discord.Forbidden) as exc:
        await channel.send("invisible")
    assert exc.value.code == 50001


async def test_user_messages_reach_the_bot_and_content_needs_the_intent(
    emu: Emulator, world: World
) -> None:
    seen: list[str] = []
    intents = discord.Intents.default()  # no message_content
    bot = commands.Bot(command_prefix="!", intents=intents, guild_ready_timeout=0.05)

    @bot.event
    async def on_message(message: discord.Message) -> None:
        seen.append(message.content)

    async with running_bot(emu, bot):
        emu.send_message(world.alice, world.channel, "hidden text")
        emu.send_message(world.alice, world.channel, f"hi <@{emu.bot_user.id}>", mentions=[])
        await emu.wait_until(lambda: len(seen) == 2, 5)
    assert seen[0] == ""

    seen.clear()
    full = make_bot()
    full.event(on_message)
    async with running_bot(emu, full):
        emu.send_message(world.alice, world.channel, "visible text")
        await emu.wait_until(lambda: seen, 5)
    assert seen == ["visible text"]
