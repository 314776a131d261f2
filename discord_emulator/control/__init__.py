"""The Python control API for tests: build a world, act as users, read what the bot did,
wait for it, move the clock and inject faults.

One class per kind of operation, each in its own module (:mod:`.world`, :mod:`.users`,
:mod:`.interactions`, :mod:`.reading`); :class:`Control` gathers them and is mixed into
:class:`~discord_emulator.server.Emulator`, so tests call ``emu.create_guild(...)``,
``await emu.invoke_slash(...)``, ``emu.history(channel)`` and so on. :class:`InteractionHandle`
is what a test holds after acting as a user. Interaction payloads are built by
:mod:`discord_emulator.interaction_builder`; the same operations are served over HTTP by
:mod:`discord_emulator.control_http`.
"""

from __future__ import annotations

from aiohttp import web

from .interactions import InteractionControl, InteractionHandle
from .users import UserControl
from .world import DEFAULT_BOT_PERMISSIONS, UNSET, Unset, WorldControl


class Control(InteractionControl, UserControl, WorldControl):
    """Every control operation, on one emulator."""


# The emulator on its aiohttp app, for routes that use the control operations (the HTTP control
# API, the chat page); REST handlers read it through ``rest.common.EMU_KEY`` as a Hub.
CONTROL_KEY: web.AppKey[Control] = web.AppKey("discord_emulator.control")


__all__ = [
    "CONTROL_KEY",
    "DEFAULT_BOT_PERMISSIONS",
    "UNSET",
    "Control",
    "InteractionHandle",
    "Unset",
]
