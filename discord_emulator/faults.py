"""Fault injection for REST: added latency, held answers, 5xx answers and 429 storms, matched
by route.

Faults are consumed in order: each matching request uses up one count. They are not Discord
rules, they reproduce Discord's bad days so the bot's retry paths get exercised.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from .errors import DiscordError
from .ratelimit import too_many


def _on_route(want_method: str | None, path_contains: str | None, method: str, path: str) -> bool:
    """Whether a request (``method``, ``path``) is one a fault or a hold names."""
    if want_method is not None and want_method.upper() != method.upper():
        return False
    return path_contains is None or path_contains in path


class Disconnect(Exception):
    """Close the request's connection without an answer."""


@dataclass
class Fault:
    kind: str  # "status", "ratelimit" or "disconnect"
    count: int
    path_contains: str | None = None
    method: str | None = None
    status: int = 500
    retry_after: float = 0.05
    scope: str = "shared"
    is_global: bool = False

    def matches(self, method: str, path: str) -> bool:
        return _on_route(self.method, self.path_contains, method, path)


@dataclass
class Hold:
    """One request Discord has handled whose answer is held back until the test releases it:
    a slow answer whose timing the test controls (stop the bot while a request is in flight)."""

    path_contains: str | None = None
    method: str | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def matches(self, method: str, path: str) -> bool:
        return _on_route(self.method, self.path_contains, method, path)

    def release(self) -> None:
        self.released.set()


class Faults:
    def __init__(self) -> None:
        self.latency: float = 0.0
        self.latency_path: str | None = None
        self.pending: list[Fault] = []
        self.holds: list[Hold] = []
        self.triggered: list[tuple[str, str, int]] = []

    def add_latency(self, seconds: float, path_contains: str | None = None) -> None:
        self.latency = seconds
        self.latency_path = path_contains

    def hold_next(self, *, path_contains: str | None = None, method: str | None = None) -> Hold:
        """Handle the next matching request, and hold its answer back until ``release()`` (or
        :meth:`clear`, or the emulator's stop). It enters ``request_log`` once answered."""
        hold = Hold(path_contains, method)
        self.holds.append(hold)
        return hold

    def fail_next(
        self,
        status: int = 500,
        count: int = 1,
        *,
        path_contains: str | None = None,
        method: str | None = None,
    ) -> None:
        """The next ``count`` matching requests get ``status`` (e.g. 500, 502, 503)."""
        self.pending.append(Fault("status", count, path_contains, method, status=status))

    def disconnect_next(
        self, count: int = 1, *, path_contains: str | None = None, method: str | None = None
    ) -> None:
        """The next ``count`` matching requests get no answer: the connection is closed (a
        proxy or load balancer dropping it; aiohttp raises ``ServerDisconnectedError``)."""
        self.pending.append(Fault("disconnect", count, path_contains, method, status=0))

    def ratelimit_next(
        self,
        count: int = 1,
        *,
        retry_after: float = 0.05,
        path_contains: str | None = None,
        method: str | None = None,
        scope: str = "shared",
        is_global: bool = False,
    ) -> None:
        """A 429 storm: the next ``count`` matching requests are rate limited."""
        self.pending.append(
            Fault(
                "ratelimit",
                count,
                path_contains,
                method,
                retry_after=retry_after,
                scope=scope,
                is_global=is_global,
            )
        )

    def clear(self) -> None:
        self.latency = 0.0
        self.latency_path = None
        self.pending.clear()
        for hold in self.holds:
            hold.release()
        self.holds.clear()

    async def apply(self, method: str, path: str) -> None:
        if self.latency and (self.latency_path is None or self.latency_path in path):
            await asyncio.sleep(self.latency)
        for fault in self.pending:
            if fault.count > 0 and fault.matches(method, path):
                fault.count -= 1
                self.triggered.append(
                    (method, path, 429 if fault.kind == "ratelimit" else fault.status)
                )
                if fault.kind == "ratelimit":
                    raise too_many(fault.retry_after, scope=fault.scope, is_global=fault.is_global)
                if fault.kind == "disconnect":
                    raise Disconnect
                reason = {
                    500: "Internal Server Error",
                    502: "Bad Gateway",
                    503: "Service Unavailable",
                    504: "Gateway Timeout",
                }.get(fault.status, "Error")
                raise DiscordError(fault.status, 0, f"{fault.status}: {reason}")
        self.pending = [f for f in self.pending if f.count > 0]

    async def hold_answer(self, method: str, path: str) -> None:
        """Wait here, after Discord handled the request, if an unused hold matches it."""
        hold = next(
            (h for h in self.holds if not h.arrived.is_set() and h.matches(method, path)), None
        )
        if hold is not None:
            hold.arrived.set()  # used up; kept until clear(), which releases it
            await hold.released.wait()
