"""Pins: pinning posts a CHANNEL_PINNED_MESSAGE notice that refers to the pin, and
CHANNEL_PINS_UPDATE tells of the newest pin
(https://discord.com/developers/docs/resources/message#pin-message; Gateway: Channel Pins
Update)."""

from __future__ import annotations

from typing import Any

from discord_emulator import errors
from discord_emulator.models import MSG_CHANNEL_PINNED_MESSAGE, Channel, Message

from .messages import MessageActions

# "Maximum number of pins reached for the channel (250)" (JSON error 30003).
MAX_PINS = 250


class PinActions(MessageActions):
    def pin_message(self, msg: Message, by_user_id: int) -> None:
        channel = self.state.channels[msg.channel_id]
        if channel.thread is not None and channel.thread.archived:
            raise errors.thread_archived()
        if msg.pinned_at is not None:
            return
        pinned = [m for m in self.state.visible_messages(channel.id) if m.pinned_at is not None]
        if len(pinned) >= MAX_PINS:
            raise errors.max_pins()
        msg.pinned_at = self.clock.time()
        self._pins_update(channel)
        self.create_message(
            channel,
            by_user_id,
            {"message_reference": {"message_id": str(msg.id)}},
            msg_type=MSG_CHANNEL_PINNED_MESSAGE,
        )

    def unpin_message(self, msg: Message) -> None:
        channel = self.state.channels[msg.channel_id]
        if channel.thread is not None and channel.thread.archived:
            raise errors.thread_archived()
        if msg.pinned_at is None:
            return
        msg.pinned_at = None
        self._pins_update(channel)

    def _pins_update(self, channel: Channel) -> None:
        times = [
            m.pinned_at for m in self.state.visible_messages(channel.id) if m.pinned_at is not None
        ]
        data: dict[str, Any] = {
            "channel_id": str(channel.id),
            "last_pin_timestamp": self.clock.iso(max(times)) if times else None,
        }
        if channel.guild_id is not None:
            data["guild_id"] = str(channel.guild_id)
        self.emu.gateway.dispatch(
            "CHANNEL_PINS_UPDATE",
            data,
            guild_id=channel.guild_id,
            channel_type=channel.type,
            channel_id=channel.id,
        )
        self.publish("channel_pins_update", data, channel_id=channel.id)
