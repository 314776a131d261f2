"""Acting as the world's users: posting, editing and deleting messages, reacting, joining
threads, and the user's DM setting."""

from __future__ import annotations

from typing import Any

from discord_emulator import errors
from discord_emulator import permissions as P
from discord_emulator.interaction_builder import Ref, ref_id
from discord_emulator.models import Message

from .base import ControlBase


class UserControl(ControlBase):
    def send_message(self, user: Ref, channel: Ref, content: str = "", **payload: Any) -> Message:
        """A user posts a message (dispatched to the bot as MESSAGE_CREATE)."""
        ch = self.state.channels[ref_id(channel)]
        body = dict(payload)
        body["content"] = content
        if ch.thread is not None:
            self.actions.ensure_writable_thread(ch, can_manage=False)
        return self.actions.create_message(ch, ref_id(user), body)

    def edit_message(self, user: Ref, message: Ref, content: str, **payload: Any) -> Message:
        """``user`` edits their own message (MESSAGE_UPDATE); Discord's client offers editing
        only to the author, and not in an archived thread (50083)."""
        msg = self.state.messages[ref_id(message)]
        if msg.author_id != ref_id(user) or msg.deleted:
            raise PermissionError(f"user {ref_id(user)} cannot edit message {msg.id}")
        meta = self.state.channels[msg.channel_id].thread
        if meta is not None and meta.archived:
            raise errors.thread_archived()
        return self.actions.edit_message(msg, {**payload, "content": content})

    def delete_message(self, user: Ref, message: Ref) -> None:
        """``user`` deletes a message (MESSAGE_DELETE): their own, or in a guild channel where
        they have Manage Messages (Message resource: Delete Message)."""
        msg = self.state.messages[ref_id(message)]
        uid = ref_id(user)
        if msg.deleted:
            raise LookupError(f"message {msg.id} is already deleted")
        channel = self.state.channels[msg.channel_id]
        may_manage = channel.guild_id is not None and P.has(
            P.channel_permissions(self.state, channel, uid), P.MANAGE_MESSAGES
        )
        if msg.author_id != uid and not may_manage:
            raise PermissionError(f"user {uid} cannot delete message {msg.id}")
        self.actions.delete_message(msg)

    def set_accepts_dms(self, user: Ref, accepts: bool) -> None:
        """The user's "Allow direct messages from server members" setting; when off the bot's
        messages to their DM fail with 50007."""
        self.state.users[ref_id(user)].accepts_dms = accepts

    def react(self, user: Ref, message: Ref, emoji: str) -> None:
        """``user`` reacts to a message with a Unicode emoji (MESSAGE_REACTION_ADD)."""
        self.actions.add_reaction(self.state.messages[ref_id(message)], ref_id(user), emoji)

    def unreact(self, user: Ref, message: Ref, emoji: str) -> None:
        """``user`` takes a reaction back (MESSAGE_REACTION_REMOVE)."""
        self.actions.remove_reaction(self.state.messages[ref_id(message)], ref_id(user), emoji)

    def join_thread(self, user: Ref, thread: Ref) -> None:
        """``user`` joins a thread (THREAD_MEMBERS_UPDATE); refused if archived (50083)."""
        self.actions.add_thread_member(self.state.channels[ref_id(thread)], ref_id(user))
