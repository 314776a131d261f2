"""Helpers for tests that run a real discord.py client against the emulator.

``running_bot`` starts ``client.start(token)`` in a task under :func:`patched`, waits for the
``ready`` event (surfacing a login/connect failure instead of hanging), and closes the client on
exit so no session or socket leaks (pytest runs with ``filterwarnings = error``).
Create clients with a short ``guild_ready_timeout`` (e.g. 0.05): discord.py otherwise waits two
seconds after the last GUILD_CREATE before dispatching ``ready``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

import discord

from .client import patched
from .models import Channel, Guild, User
from .ratelimit import RateLimitConfig
from .server import Emulator, EmulatorConfig

ClientT = TypeVar("ClientT", bound=discord.Client)


def fast_config(**overrides: object) -> EmulatorConfig:
    """A config for tests: Discord's rules and limits, with rate-limit windows 100x shorter."""
    config = EmulatorConfig(ratelimits=RateLimitConfig(time_scale=0.01), identify_interval=0.05)
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


@dataclass
class World:
    """The usual starting point: one guild with a text channel and a member ``alice``."""

    emu: Emulator
    guild: Guild
    channel: Channel
    alice: User


def make_world(
    emu: Emulator,
    *,
    guild_name: str = "Test Guild",
    channel_name: str = "general",
    user_name: str = "alice",
) -> World:
    """Create the bot application (if missing), a guild the bot is in, a channel and a user."""
    if emu.application is None:
        emu.create_application("Errand")
    guild = emu.create_guild(guild_name)
    channel = emu.create_channel(guild, channel_name)
    alice = emu.create_user(user_name)
    emu.add_member(guild, alice)
    return World(emu, guild, channel, alice)


@asynccontextmanager
async def running_bot(
    emu: Emulator, client: ClientT, *, token: str | None = None, ready_timeout: float = 10.0
) -> AsyncIterator[ClientT]:
    """Run ``client`` against ``emu`` until the block exits."""
    if token is None:
        app = emu.application or emu.create_application()
        token = app.token
    with patched(emu):
        task = asyncio.create_task(client.start(token), name="discord-emulator-bot")
        ready = asyncio.create_task(client.wait_until_ready())
        try:
            done, _ = await asyncio.wait(
                {task, ready}, timeout=ready_timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if task in done:
                task.result()  # raises the login/connect error
                raise RuntimeError("the client stopped before it was ready")
            if ready not in done:
                raise TimeoutError(f"the client was not ready within {ready_timeout}s")
            yield client
        finally:
            ready.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ready
            await client.close()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 5.0)


__all__ = ["World", "fast_config", "make_world", "running_bot"]
