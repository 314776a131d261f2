"""Payload limits Discord enforces (issue point 2): 400 / 50035 for an empty embed field, select
option limits, autocomplete choice names and modal titles; 413 / 40005 for a file over the
upload limit; option values outside a command's declared limits never reach the bot."""

from __future__ import annotations

import io

import discord
import pytest
from discord import app_commands
from discord.ext import commands

from discord_emulator import Emulator, InteractionRefused
from discord_emulator.testing import running_bot
from discord_emulator.validation import MAX_UPLOAD_BYTES

from .conftest import BotRecorder, World


def text_channel(bot: commands.Bot, channel_id: int) -> discord.TextChannel:
    channel = bot.get_channel(channel_id)
    assert isinstance(channel, discord.TextChannel)
    return channel


async def test_embed_field_without_value_is_refused(world: World, running: commands.Bot) -> None:
    channel = text_channel(running, world.channel.id)
    embed = discord.Embed(title="t").add_field(name="status", value="")
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send(embed=embed)
    assert (exc.value.status, exc.value.code) == (400, 50035)
    assert "fields" in str(exc.value)


async def test_select_option_label_and_count_limits(world: World, running: commands.Bot) -> None:
    channel = text_channel(running, world.channel.id)
    long_label = discord.ui.View()
    long_label.add_item(discord.ui.Select(options=[discord.SelectOption(label="x" * 101)]))
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("pick", view=long_label)
    assert (exc.value.status, exc.value.code) == (400, 50035)

    select = discord.ui.Select(options=[discord.SelectOption(label=str(i)) for i in range(25)])
    select.options.append(discord.SelectOption(label="26th"))
    too_many = discord.ui.View()
    too_many.add_item(select)
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("pick", view=too_many)
    assert (exc.value.status, exc.value.code) == (400, 50035)


async def test_autocomplete_choice_name_over_100_is_refused(
    emu: Emulator, world: World, plain_bot: commands.Bot, recorder: BotRecorder
) -> None:
    async def names(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return [app_commands.Choice(name="n" * 101, value="v")]

    @plain_bot.tree.command(name="pick", description="Pick")
    @app_commands.autocomplete(item=names)
    async def pick(interaction: discord.Interaction, item: str) -> None:
        await interaction.response.send_message(item)

    async with running_bot(emu, plain_bot):
        handle = await emu.autocomplete(world.alice, world.channel, "pick", {"item": "n"}, "item")
        await emu.wait_until(
            lambda: emu.request_log(path_contains=f"/interactions/{handle.id}/", status=400), 5
        )
    (record,) = emu.request_log(path_contains=f"/interactions/{handle.id}/")
    assert record.code == 50035
    assert handle.choices is None


async def test_modal_title_over_45_is_refused(
    emu: Emulator, world: World, plain_bot: commands.Bot, recorder: BotRecorder
) -> None:
    class Long(discord.ui.Modal, title="t" * 46):
        answer = discord.ui.TextInput(label="Answer")

    @plain_bot.tree.command(name="ask", description="Ask")
    async def ask(interaction: discord.Interaction) -> None:
        try:
            await interaction.response.send_modal(Long())
        except discord.HTTPException as exc:
            recorder.errors.append(exc)

    async with running_bot(emu, plain_bot):
        handle = await emu.invoke_slash(world.alice, world.channel, "ask")
        await emu.wait_until(lambda: recorder.errors, 5)
    (err,) = recorder.errors
    assert isinstance(err, discord.HTTPException)
    assert (err.status, err.code) == (400, 50035)
    assert handle.interaction.modal is None


async def test_file_over_the_upload_limit_is_413(world: World, running: commands.Bot) -> None:
    channel = text_channel(running, world.channel.id)
    big = discord.File(io.BytesIO(b"x" * (MAX_UPLOAD_BYTES + 1)), filename="big.txt")
    with pytest.raises(discord.HTTPException) as exc:
        await channel.send("log", file=big)
    assert (exc.value.status, exc.value.code) == (413, 40005)
    ok = discord.File(io.BytesIO(b"x" * 1024), filename="small.txt")
    sent = await channel.send("log", file=ok)
    assert sent.attachments[0].size == 1024


async def test_option_values_outside_declared_limits_never_reach_the_bot(
    emu: Emulator, world: World, plain_bot: commands.Bot, recorder: BotRecorder
) -> None:
    @plain_bot.tree.command(name="summon", description="Start")
    @app_commands.choices(
        color=[
            app_commands.Choice(name="Red", value="red"),
            app_commands.Choice(name="Blue", value="blue"),
        ]
    )
    async def summon(
        interaction: discord.Interaction,
        task: app_commands.Range[str, 1, 10],
        steps: app_commands.Range[int, 1, 5] = 1,
        color: str = "red",
    ) -> None:
        recorder.seen.append((task, steps, color))
        await interaction.response.send_message("ok")

    async with running_bot(emu, plain_bot):
        for options in (
            {"task": "x" * 11},
            {"task": "ok", "steps": 6},
            {"task": "ok", "steps": 0},
            {"task": "ok", "color": "green"},
        ):
            with pytest.raises(InteractionRefused):
                await emu.invoke_slash(world.alice, world.channel, "summon", options)
        handle = await emu.invoke_slash(
            world.alice, world.channel, "summon", {"task": "x" * 10, "steps": 5, "color": "blue"}
        )
        await handle.wait_original()
    assert recorder.seen == [("x" * 10, 5, "blue")]
    assert len(emu.state.interactions) == 1
