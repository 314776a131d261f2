"""Reactions (https://discord.com/developers/docs/resources/message#create-reaction and the
Message Reaction Add/Remove/Remove All/Remove Emoji gateway events)."""

from __future__ import annotations

from typing import Any

from discord_emulator import errors
from discord_emulator.models import Message, emoji_payload

from .base import ActionsBase

# "Maximum number of reactions reached (20)": different emojis on one message (JSON error 30010).
MAX_REACTION_EMOJIS = 20


class ReactionActions(ActionsBase):
    def _reaction_event(self, msg: Message) -> dict[str, Any]:
        data: dict[str, Any] = {"channel_id": str(msg.channel_id), "message_id": str(msg.id)}
        if msg.guild_id is not None:
            data["guild_id"] = str(msg.guild_id)
        return data

    def _dispatch_reaction(self, event: str, msg: Message, data: dict[str, Any]) -> None:
        channel = self.state.channels[msg.channel_id]
        self.emu.gateway.dispatch(
            event,
            data,
            guild_id=channel.guild_id,
            channel_type=channel.type,
            channel_id=channel.id,
        )
        self.publish(event.lower(), data, channel_id=msg.channel_id, message_id=msg.id)

    def add_reaction(self, msg: Message, user_id: int, key: str) -> None:
        """``user_id`` reacts with ``key``; at most 20 different emojis per message (30010)."""
        self.ensure_reactable(msg)
        users = msg.reactions.get(key)
        if users is None:
            if len(msg.reactions) >= MAX_REACTION_EMOJIS:
                raise errors.max_reactions()
            users = msg.reactions[key] = []
        if user_id in users:
            return  # reacting twice changes nothing and sends no event
        users.append(user_id)
        data = self._reaction_event(msg)
        data.update(
            user_id=str(user_id),
            emoji=emoji_payload(key),
            message_author_id=str(msg.author_id),
            burst=False,
            burst_colors=[],
            type=0,
        )
        member = self.state.member(msg.guild_id, user_id) if msg.guild_id else None
        if member is not None:
            data["member"] = self.state.member_payload(member)
        self._dispatch_reaction("MESSAGE_REACTION_ADD", msg, data)

    def remove_reaction(self, msg: Message, user_id: int, key: str) -> None:
        self.ensure_reactable(msg)
        users = msg.reactions.get(key) or []
        if user_id not in users:
            return
        users.remove(user_id)
        if not users:
            del msg.reactions[key]
        data = self._reaction_event(msg)
        data.update(user_id=str(user_id), emoji=emoji_payload(key), burst=False, type=0)
        self._dispatch_reaction("MESSAGE_REACTION_REMOVE", msg, data)

    def clear_reactions(self, msg: Message, key: str | None = None) -> None:
        """Remove every reaction (MESSAGE_REACTION_REMOVE_ALL) or one emoji's
        (MESSAGE_REACTION_REMOVE_EMOJI)."""
        self.ensure_reactable(msg)
        data = self._reaction_event(msg)
        if key is None:
            msg.reactions.clear()
            self._dispatch_reaction("MESSAGE_REACTION_REMOVE_ALL", msg, data)
        elif msg.reactions.pop(key, None) is not None:
            data["emoji"] = emoji_payload(key)
            self._dispatch_reaction("MESSAGE_REACTION_REMOVE_EMOJI", msg, data)

    def ensure_reactable(self, msg: Message) -> None:
        # "Users cannot edit messages, add reactions, use application commands, or join
        # archived threads" (https://discord.com/developers/docs/topics/threads).
        meta = self.state.channels[msg.channel_id].thread
        if meta is not None and meta.archived:
            raise errors.thread_archived()
