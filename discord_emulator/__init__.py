"""A local emulator of Discord REST API v10 and gateway, for running the real discord.py client.

Start it with ``async with Emulator() as emu``, point discord.py at it with
``with patched(emu)`` (or :func:`discord_emulator.testing.running_bot`), build a world with the
control API (``emu.create_guild``, ``emu.create_channel``, ``emu.create_user``) and drive the bot
with ``await emu.invoke_slash(...)``. See docs/emulator.md.
"""

from __future__ import annotations

from . import intents, permissions
from .client import patched
from .component_input import Upload
from .control import DEFAULT_BOT_PERMISSIONS, InteractionHandle
from .errors import DiscordError
from .events import EmulatorEvent, Subscription
from .interaction_builder import InteractionRefused
from .models import (
    DM,
    FORUM,
    PRIVATE_THREAD,
    PUBLIC_THREAD,
    TEXT,
    Application,
    Channel,
    Guild,
    Member,
    Message,
    MessageVersion,
    Overwrite,
    Role,
    User,
)
from .ratelimit import Limit, RateLimitConfig
from .server import Emulator, EmulatorConfig, RequestRecord

__all__ = [
    "DEFAULT_BOT_PERMISSIONS",
    "DM",
    "FORUM",
    "PRIVATE_THREAD",
    "PUBLIC_THREAD",
    "TEXT",
    "Application",
    "Channel",
    "DiscordError",
    "Emulator",
    "EmulatorConfig",
    "EmulatorEvent",
    "Guild",
    "InteractionHandle",
    "InteractionRefused",
    "Limit",
    "Member",
    "Message",
    "MessageVersion",
    "Overwrite",
    "RateLimitConfig",
    "RequestRecord",
    "Role",
    "Subscription",
    "Upload",
    "User",
    "intents",
    "patched",
    "permissions",
]
