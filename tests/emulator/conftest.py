"""Fixtures for the emulator's own tests: a running emulator with a guild, a channel, a user,
and a real discord.py bot (``commands.Bot`` with an app-command tree) connected to it."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

# discord.py 2.7 imports the stdlib ``audioop`` (deprecated in 3.11+); with
# ``filterwarnings = error`` that import would fail, so import discord once with it silenced.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord
import pytest
from discord import app_commands
from discord.ext import commands

from discord_emulator import Emulator
from discord_emulator.testing import World, running_bot


@dataclass
class BotRecorder:
    """Shared place where test command handlers leave what they saw."""

    seen: list[Any] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)


def make_bot(**kwargs: Any) -> commands.Bot:
    intents = discord.Intents.default()
    intents.message_content = True
    return commands.Bot(command_prefix="!", intents=intents, guild_ready_timeout=0.05, **kwargs)


@pytest.fixture
def recorder() -> BotRecorder:
    return BotRecorder()


@pytest.fixture
def plain_bot(world: World, recorder: BotRecorder) -> commands.Bot:
    """A plain discord.py bot (not Errand's) with a few commands; tests may add more before the
    ``running`` fixture syncs."""
    bot = make_bot()

    @bot.tree.command(name="ping", description="Answer pong")
    async def ping(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("pong")

    job = app_commands.Group(name="job", description="Jobs")

    @job.command(name="status", description="Job status")
    @app_commands.describe(id="job id")
    async def status(interaction: discord.Interaction, id: str) -> None:
        recorder.seen.append(("status", id))
        await interaction.response.send_message(f"job {id}: running", ephemeral=True)

    bot.tree.add_command(job)

    async def setup_hook() -> None:
        await bot.tree.sync()

    bot.setup_hook = setup_hook  # type: ignore[method-assign]
    return bot


@pytest.fixture
async def running(
    emu: Emulator, world: World, plain_bot: commands.Bot
) -> AsyncIterator[commands.Bot]:
    async with running_bot(emu, plain_bot) as client:
        yield client
