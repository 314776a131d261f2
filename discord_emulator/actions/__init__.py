"""State mutations shared by the REST handlers and the control API.

Each action changes :class:`~discord_emulator.state.State`, sends the gateway dispatch Discord
would send (MESSAGE_CREATE, THREAD_UPDATE, ...) and publishes an :class:`EmulatorEvent` so tests
and live viewers see it. Rules that depend only on the entity (archived/locked threads, nonces,
thread-per-message) live here; permission checks on the acting bot live in the REST handlers.
:class:`Actions` gathers one class per resource (messages, pins, reactions, threads, channels,
members), each in its own module.
"""

from __future__ import annotations

from .base import ActionsHost
from .channels import ChannelActions
from .members import MemberActions
from .messages import UploadedFile
from .pins import PinActions
from .reactions import ReactionActions
from .threads import AUTO_ARCHIVE_DURATIONS


class Actions(ChannelActions, PinActions, ReactionActions, MemberActions):
    """Every action, on one emulator."""


__all__ = ["AUTO_ARCHIVE_DURATIONS", "Actions", "ActionsHost", "UploadedFile"]
