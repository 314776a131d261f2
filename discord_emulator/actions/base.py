"""What every group of actions shares: the emulator they act on and how they publish events."""

from __future__ import annotations

from typing import Any, Protocol

from discord_emulator.clock import VirtualClock
from discord_emulator.config import EmulatorConfig
from discord_emulator.events import EmulatorEvent, EventHub
from discord_emulator.gateway import Gateway
from discord_emulator.state import State


class ActionsHost(Protocol):
    """What the actions need of the emulator: its settings, world, clock, event hub, gateway
    and URL."""

    config: EmulatorConfig
    clock: VirtualClock
    state: State
    events: EventHub
    gateway: Gateway

    @property
    def base_url(self) -> str: ...


class ActionsBase:
    """The emulator an action changes, and the event it publishes about the change."""

    def __init__(self, emu: ActionsHost) -> None:
        self.emu = emu
        self.state = emu.state
        self.clock = emu.clock

    def publish(self, kind: str, data: dict[str, Any], **extra: Any) -> None:
        self.emu.events.publish(EmulatorEvent(kind, data, self.clock.time(), extra))
