"""Reading what the bot did (every message with its versions, channels, threads) and waiting
for it without blind sleeps."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

from discord_emulator.events import EmulatorEvent, Subscription
from discord_emulator.interaction_builder import Ref, ref_id
from discord_emulator.models import DM, Channel, Message

from .base import ControlBase

T = TypeVar("T")


class ReadingControl(ControlBase):
    def message(self, message_id: Ref) -> Message:
        return self.state.messages[ref_id(message_id)]

    def history(
        self, channel: Ref, *, include_deleted: bool = True, include_ephemeral: bool = True
    ) -> list[Message]:
        """Every message ever posted in the channel, oldest first, each with ``.versions``."""
        msgs = [
            self.state.messages[m] for m in self.state.channel_messages.get(ref_id(channel), [])
        ]
        return [
            m
            for m in msgs
            if (include_deleted or not m.deleted) and (include_ephemeral or not m.ephemeral)
        ]

    def channel(self, channel_id: Ref) -> Channel:
        """A channel or thread, including deleted ones."""
        cid = ref_id(channel_id)
        return self.state.channels.get(cid) or self.state.deleted_channels[cid]

    def threads(self, parent: Ref) -> list[Channel]:
        pid = ref_id(parent)
        return [c for c in self.state.channels.values() if c.parent_id == pid and c.is_thread]

    def thread_of(self, message: Ref) -> Channel | None:
        msg = self.state.messages[ref_id(message)]
        return self.state.channels.get(msg.thread_id) if msg.thread_id else None

    async def wait_until(self, condition: Callable[[], T | None], timeout: float = 5.0) -> T:  # noqa: ASYNC109
        """Re-check ``condition`` after every state change until it returns a truthy value."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            value = condition()
            if value:
                return value
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"condition not met within {timeout}s")
            # Wake on any state change, and poll as well so conditions on the test's own
            # objects (not emulator state) are noticed promptly too.
            with contextlib.suppress(TimeoutError):
                await self.events.wait_for(lambda _ev: True, timeout=min(remaining, 0.02))

    async def wait_for(
        self,
        predicate: Callable[[EmulatorEvent], bool],
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> EmulatorEvent:
        """The next event (published after this call) matching ``predicate``."""
        return await self.events.wait_for(predicate, timeout)

    async def wait_for_message(
        self,
        channel: Ref,
        predicate: Callable[[Message], bool] | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> Message:
        """The first live message in ``channel`` (already there or yet to come) matching."""
        cid = ref_id(channel)

        def check() -> Message | None:
            for mid in self.state.channel_messages.get(cid, []):
                msg = self.state.messages[mid]
                if not msg.deleted and (predicate is None or predicate(msg)):
                    return msg
            return None

        return await self.wait_until(check, timeout)

    def subscribe(self, maxsize: int = 10000) -> Subscription:
        """An async iterator of every state-change event from now on (close() it when done)."""
        return self.events.subscribe(maxsize)

    def snapshot(self) -> dict[str, Any]:
        """A JSON summary of the world (for the HTTP control API and debugging)."""
        s = self.state
        return {
            "application": None
            if self.application is None
            else {
                "id": str(self.application.id),
                "bot_user_id": str(self.application.bot_user_id),
                "name": self.application.name,
            },
            "users": [u.payload() for u in s.users.values()],
            "guilds": [s.guild_create_payload(g) for g in s.guilds.values()],
            "dms": [s.channel_payload(c) for c in s.channels.values() if c.type == DM],
        }

    def history_payload(self, channel: Ref) -> list[dict[str, Any]]:
        out = []
        for msg in self.history(channel):
            data = self.state.message_payload(msg)
            data["deleted"] = msg.deleted
            data["versions"] = [
                {
                    "at": self.clock.iso(v.at),
                    "content": v.content,
                    "embeds": v.embeds,
                    "components": v.components,
                    "flags": v.flags,
                }
                for v in msg.versions
            ]
            out.append(data)
        return out
