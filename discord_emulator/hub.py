"""What the emulator's parts need of the emulator: the :class:`Hub` protocol.

The REST handlers, the control API, the HTTP control routes, the chat page and the world file
reach the emulator's state, clock, gateway, actions, limits and faults through this protocol
rather than through :class:`~discord_emulator.server.Emulator`, so imports point one way:
:mod:`discord_emulator.server` builds the emulator from every part and no part imports it. The
gateway and the actions need less and say so in their own protocols
(:class:`~discord_emulator.gateway.GatewayHost`, :class:`~discord_emulator.actions.ActionsHost`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from aiohttp import web

from .actions import Actions
from .clock import VirtualClock
from .config import EmulatorConfig
from .events import EventHub
from .faults import Faults
from .gateway import Gateway
from .models import Channel
from .ratelimit import RateLimiter
from .state import State


class Hub(Protocol):
    """The emulator as its parts see it; :class:`~discord_emulator.server.Emulator` is one."""

    config: EmulatorConfig
    clock: VirtualClock
    state: State
    events: EventHub
    gateway: Gateway
    limiter: RateLimiter
    faults: Faults
    actions: Actions
    # Extra routes (e.g. the chat page) added to every app the emulator builds.
    app_setup: list[Callable[[web.Application], None]]

    @property
    def base_url(self) -> str: ...

    @property
    def gateway_url(self) -> str: ...

    def permissions(self, channel: Channel, user_id: int) -> int: ...

    def require_view(self, channel: Channel, user_id: int) -> None: ...

    def dm_channel(self, bot_id: int, user_id: int) -> Channel: ...

    async def restart(self) -> None: ...
