"""Interaction rules: 3 s deadline (10062), single acknowledgement (40060), 15 min token
(50027), deferred responses, ephemeral messages, autocomplete and component clicks."""

from __future__ import annotations

import asyncio

import discord
import pytest
from discord import app_commands
from discord.ext import commands

from discord_emulator import Emulator
from discord_emulator.testing import running_bot

from .conftest import BotRecorder, World


async def test_subcommand_with_options_and_ephemeral_reply(
    world: World, running: commands.Bot, recorder: BotRecorder
) -> None:
    emu = world.emu
    handle = await emu.invoke_slash(world.alice, world.channel, "job status", {"id": "X"})
    msg = await handle.wait_original()
    assert msg.content == "job X: running"
    assert msg.ephemeral
    assert recorder.seen == [("status", "X")]
    # Ephemeral messages are not part of the channel for the bot's channel endpoints.
    channel = running.get_channel(world.channel.id)
    assert isinstance(channel, discord.TextChannel)
    with pytest.raises(discord.NotFound) as exc:
        await channel.fetch_message(msg.id)
    assert exc.value.code == 10008
    with pytest.raises(discord.NotFound) as exc:
        await channel.get_partial_message(msg.id).edit(content="changed")
    assert exc.value.code == 10008


async def test_late_initial_response_is_unknown_interaction(
    emu: Emulator, world: World, plain_bot: commands.Bot, recorder: BotRecorder
) -> None:
    entered, go = asyncio.Event(), asyncio.Event()

    @plain_bot.tree.command(name="slow", description="Answers too late")
    async def slow(interaction: discord.Interaction) -> None:
        entered.set()
        await go.wait()
        try:
            await interaction.response.send_message("too late")
        except discord.HTTPException as exc:
            recorder.errors.append(exc)

    async with running_bot(emu, plain_bot):
        handle = await emu.invoke_slash(world.alice, world.channel, "slow")
        await asyncio.wait_for(entered.wait(), 5)
        emu.advance(3.5)  # past Discord's 3 second deadline, without sleeping
        go.set()
        await emu.wait_until(lambda: recorder.errors, 5)
    (err,) = recorder.errors
    assert isinstance(err, discord.NotFound)
    assert err.code == 10062
    assert err.text == "Unknown interaction"
    assert handle.response_type is None


async def test_second_acknowledgement_and_expired_token(
    emu: Emulator, world: World, plain_bot: commands.Bot, recorder: BotRecorder
) -> None:
    later = asyncio.Event()

    @plain_bot.tree.command(name="twice", description="Acknowledges twice")
    async def twice(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("first")
        try:
            # A fresh InteractionResponse bypasses discord.py's local "already responded" guard,
            # so the request reaches the emulator as it would reach Discord.
            await discord.InteractionResponse(interaction).send_message("second")
        except discord.HTTPException as exc:
            recorder.errors.append(exc)
        await later.wait()
        try:
            await interaction.followup.send("after 15 minutes")
        except discord.HTTPException as exc:
            recorder.errors.append(exc)

    async with running_bot(emu, plain_bot):
        handle = await emu.invoke_slash(world.alice, world.channel, "twice")
        await handle.wait_original()
        await emu.wait_until(lambda: recorder.errors, 5)
        emu.advance(15 * 60 + 1)
        later.set()
        await emu.wait_until(lambda: len(recorder.errors) == 2, 5)
    first, second = recorder.errors
    assert first.status == 400
    assert first.code == 40060
    assert first.text == "Interaction has already been acknowledged."
    assert second.status == 401
    assert second.code == 50027
    assert [m.content for m in emu.history(world.channel)] == ["first"]


async def test_deferred_response_then_edit_and_followups(
    emu: Emulator, world: World, plain_bot: commands.Bot
) -> None:
    @plain_bot.tree.command(name="deferred", description="Defers")
    async def deferred(interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        await interaction.edit_original_response(content="working 1/2")
        await interaction.edit_original_response(content="working 2/2")
        await interaction.followup.send("secret", ephemeral=True)
        await interaction.followup.send("public")

    async with running_bot(emu, plain_bot):
        handle = await emu.invoke_slash(world.alice, world.channel, "deferred")
        await handle.wait_followups(2)
        original = handle.original
        assert original is not None
        assert handle.response_type == 5
        assert [v.content for v in original.versions] == ["", "working 1/2", "working 2/2"]
        assert original.versions[0].flags & 128  # LOADING while deferred
        assert not original.flags & 128
        secret, public = handle.followups
        assert secret.ephemeral
        assert not public.ephemeral


async def test_first_followup_replaces_the_loading_message(
    emu: Emulator, world: World, plain_bot: commands.Bot
) -> None:
    @plain_bot.tree.command(name="thinker", description="Defers then follows up")
    async def thinker(interaction: discord.Interaction) -> None:
        await interaction.response.defer()
        await interaction.followup.send("result")

    async with running_bot(emu, plain_bot):
        handle = await emu.invoke_slash(world.alice, world.channel, "thinker")
        (msg,) = await handle.wait_followups(1)
        assert msg.id == handle.interaction.original_message_id
        assert msg.content == "result"
        assert len(emu.history(world.channel)) == 1


async def test_autocomplete_returns_choices(
    emu: Emulator, world: World, plain_bot: commands.Bot
) -> None:
    async def names(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return [
            app_commands.Choice(name=n, value=n)
            for n in ("alpha", "beta", "alps")
            if n.startswith(current)
        ]

    @plain_bot.tree.command(name="pick", description="Pick one")
    @app_commands.autocomplete(item=names)
    async def pick(interaction: discord.Interaction, item: str) -> None:
        await interaction.response.send_message(item)

    async with running_bot(emu, plain_bot):
        handle = await emu.autocomplete(
            world.alice, world.channel, "pick", {"item": "al"}, focused="item"
        )
        choices = await handle.wait_choices()
        assert [c["value"] for c in choices] == ["alpha", "alps"]
        assert handle.response_type == 8


async def test_component_click_updates_the_message(
    emu: Emulator, world: World, plain_bot: commands.Bot
) -> None:
    class Confirm(discord.ui.View):
        @discord.ui.button(label="Confirm", custom_id="confirm")
        async def confirm(
            self, interaction: discord.Interaction, button: discord.ui.Button
        ) -> None:  # type: ignore[type-arg]
            await interaction.response.edit_message(
                content=f"confirmed by {interaction.user.name}", view=None
            )

    @plain_bot.tree.command(name="ask", description="Ask for confirmation")
    async def ask(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("Confirm?", view=Confirm(timeout=None))

    async with running_bot(emu, plain_bot):
        handle = await emu.invoke_slash(world.alice, world.channel, "ask")
        question = await handle.wait_original()
        assert question.components[0]["components"][0]["custom_id"] == "confirm"
        click = await emu.click(world.alice, question, "confirm")
        await click.wait_response()
        assert click.response_type == 7
        assert [v.content for v in question.versions] == ["Confirm?", "confirmed by alice"]
        assert question.components == []


async def test_unknown_command_and_missing_option_are_refused(
    world: World, running: commands.Bot
) -> None:
    with pytest.raises(LookupError):
        await world.emu.invoke_slash(world.alice, world.channel, "nope")
    with pytest.raises(ValueError, match="required"):
        await world.emu.invoke_slash(world.alice, world.channel, "job status")


async def test_modal_round_trip(emu: Emulator, world: World, plain_bot: commands.Bot) -> None:
    class Feedback(discord.ui.Modal, title="Feedback"):
        text = discord.ui.TextInput(label="Your feedback", custom_id="text")

        async def on_submit(self, interaction: discord.Interaction) -> None:
            await interaction.response.send_message(f"thanks: {self.text.value}")

    @plain_bot.tree.command(name="feedback", description="Give feedback")
    async def feedback(interaction: discord.Interaction) -> None:
        await interaction.response.send_modal(Feedback())

    async with running_bot(emu, plain_bot):
        opened = await emu.invoke_slash(world.alice, world.channel, "feedback")
        await opened.wait_response()
        assert opened.response_type == 9
        submitted = await emu.submit_modal(world.alice, opened, {"text": "great"})
        reply = await submitted.wait_original()
        assert reply.content == "thanks: great"


async def test_guild_sync_deferred_update_and_dm_command(emu: Emulator, world: World) -> None:
    intents = discord.Intents.default()
    client = discord.Client(intents=intents, guild_ready_timeout=0.05)
    tree = app_commands.CommandTree(client)
    guild_obj = discord.Object(id=world.guild.id)

    class Counter(discord.ui.View):
        @discord.ui.button(label="+1", custom_id="inc")
        async def inc(self, interaction: discord.Interaction, button: discord.ui.Button) -> None:  # type: ignore[type-arg]
            await interaction.response.defer()  # type 6: acknowledge, edit later
            await interaction.edit_original_response(content="count: 1")

    @tree.command(name="count", description="A counter", guild=guild_obj)
    async def count(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("count: 0", view=Counter(timeout=None))

    @tree.command(name="hello", description="Works in DMs too")
    async def hello(interaction: discord.Interaction) -> None:
        where = "dm" if interaction.guild_id is None else "guild"
        await interaction.response.send_message(f"hello from {where}")

    async def setup_hook() -> None:
        await tree.sync(guild=guild_obj)
        await tree.sync()

    client.setup_hook = setup_hook  # type: ignore[method-assign]
    async with running_bot(emu, client):
        listed = await tree.fetch_commands(guild=guild_obj)
        assert [c.name for c in listed] == ["count"]
        handle = await emu.invoke_slash(world.alice, world.channel, "count")
        message = await handle.wait_original()
        click = await emu.click(world.alice, message, "inc")
        await emu.wait_until(lambda: message.content == "count: 1", 5)
        assert click.response_type == 6
        assert [v.content for v in message.versions] == ["count: 0", "count: 1"]
        dm = emu.create_dm(world.alice)
        in_dm = await emu.invoke_slash(world.alice, dm, "hello")
        assert (await in_dm.wait_original()).content == "hello from dm"
