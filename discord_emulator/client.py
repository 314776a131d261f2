"""Point discord.py at an emulator: patch ``Route.BASE`` and ``DiscordWebSocket.DEFAULT_GATEWAY``.

Those two class attributes are all discord.py uses to find Discord (the interaction webhook
adapter shares ``Route``); nothing else is patched. The previous values are restored on exit.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

import yarl

# discord.py 2.7 imports the deprecated stdlib ``audioop`` (voice support); under pytest's
# ``filterwarnings = error`` that import would fail, so this one import is made quietly.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from discord.gateway import DiscordWebSocket
    from discord.http import Route


class Addresses(Protocol):
    """Where an emulator serves REST and the gateway (an :class:`~discord_emulator.Emulator`)."""

    @property
    def api_base(self) -> str: ...

    @property
    def gateway_url(self) -> str: ...


E = TypeVar("E", bound=Addresses)


@contextmanager
def patched(emulator: E) -> Iterator[E]:
    """``with patched(emu): await client.start(token)`` talks to the emulator."""
    old_base, old_gateway = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = emulator.api_base
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(emulator.gateway_url)
    try:
        yield emulator
    finally:
        Route.BASE = old_base
        DiscordWebSocket.DEFAULT_GATEWAY = old_gateway
