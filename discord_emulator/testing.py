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
from typing import TypeVar

import discord

from .client import patched
from .ratelimit import RateLimitConfig
from .server import Emulator, EmulatorConfig

ClientT = TypeVar("ClientT", bound=discord.Client)


def fast_config(**overrides: object) -> EmulatorConfig:
    """A config for tests: Discord's rules and limits, with rate-limit windows 100x shorter."""
    config = EmulatorConfig(ratelimits=RateLimitConfig(time_scale=0.01))
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


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


__all__ = ["fast_config", "running_bot"]
