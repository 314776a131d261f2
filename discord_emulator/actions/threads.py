"""Threads: starting them, their members, unarchiving on activity and archiving after
inactivity (https://discord.com/developers/docs/topics/threads)."""

from __future__ import annotations

from typing import Any

from discord_emulator import errors
from discord_emulator.state import (
    DM,
    FLAG_HAS_THREAD,
    FORUM,
    MSG_THREAD_CREATED,
    PUBLIC_THREAD,
    Channel,
    Message,
    ThreadMeta,
)

from .messages import MessageActions

AUTO_ARCHIVE_DURATIONS = (60, 1440, 4320, 10080)


class ThreadActions(MessageActions):
    def ensure_writable_thread(self, channel: Channel, *, can_manage: bool) -> None:
        """Sending into an archived thread unarchives it, unless it is locked
        (https://discord.com/developers/docs/topics/threads#archiving-and-unarchiving-threads)."""
        meta = channel.thread
        if meta is None:
            return
        if meta.locked and not can_manage:
            raise errors.thread_locked()
        if meta.archived:
            meta.archived = False
            meta.archive_timestamp = self.clock.time()
            self._thread_update(channel)
            self._unarchived(channel)

    def create_thread(
        self,
        parent: Channel,
        owner_id: int,
        name: str,
        *,
        thread_type: int = PUBLIC_THREAD,
        auto_archive_duration: int | None = None,
        invitable: bool = True,
        from_message: Message | None = None,
        rate_limit_per_user: int = 0,
    ) -> Channel:
        if parent.type == DM:
            raise errors.cannot_dm_channel()
        if from_message is not None and from_message.thread_id is not None:
            raise errors.thread_already_created()
        now = self.clock.time()
        duration = auto_archive_duration or 1440
        if duration not in AUTO_ARCHIVE_DURATIONS:
            raise errors.invalid_form_body(
                errors.field_error(
                    ["auto_archive_duration"],
                    "BASE_TYPE_CHOICES",
                    f"Value must be one of {set(AUTO_ARCHIVE_DURATIONS)}.",
                )
            )
        if not name or len(name) > 100:
            raise errors.invalid_form_body(
                errors.field_error(
                    ["name"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                )
            )
        # A thread started from a message has the message's id (Threads docs).
        tid = from_message.id if from_message is not None else self.state.new_id()
        thread = Channel(
            id=tid,
            type=thread_type,
            guild_id=parent.guild_id,
            name=name,
            parent_id=parent.id,
            owner_id=owner_id,
            last_activity=now,
            rate_limit_per_user=rate_limit_per_user,
            thread=ThreadMeta(
                auto_archive_duration=duration,
                archive_timestamp=now,
                invitable=invitable,
                create_timestamp=now,
            ),
        )
        thread.thread_member_ids.add(owner_id)
        self.state.channels[tid] = thread
        if from_message is not None:
            from_message.thread_id = tid
            from_message.flags |= FLAG_HAS_THREAD
        payload = self.state.channel_payload(thread)
        payload["newly_created"] = True
        self.emu.gateway.dispatch("THREAD_CREATE", payload, guild_id=parent.guild_id)
        self.publish(
            "thread_create", self.state.channel_payload(thread), channel_id=tid, parent_id=parent.id
        )
        if from_message is None and parent.type != FORUM and thread_type == PUBLIC_THREAD:
            # Discord posts a THREAD_CREATED system message in the parent channel.
            self.create_message(parent, owner_id, {"content": name}, msg_type=MSG_THREAD_CREATED)
        return thread

    def _unarchived(self, thread: Channel) -> None:
        """After the THREAD_UPDATE of an unarchive, each member bot gets THREAD_MEMBER_UPDATE
        with its own thread member (and ``guild_id``)
        (https://discord.com/developers/docs/topics/threads#unarchiving-a-thread)."""
        for app in self.state.applications.values():
            if app.bot_user_id not in thread.thread_member_ids:
                continue
            data = self._thread_member(thread, app.bot_user_id)
            data["guild_id"] = str(thread.guild_id)
            self.emu.gateway.dispatch(
                "THREAD_MEMBER_UPDATE", data, application_id=app.id, guild_id=thread.guild_id
            )

    def _thread_update(self, thread: Channel) -> None:
        payload = self.state.channel_payload(thread)
        self.emu.gateway.dispatch("THREAD_UPDATE", payload, guild_id=thread.guild_id)
        self.publish("thread_update", payload, channel_id=thread.id)

    def _thread_member(self, thread: Channel, user_id: int) -> dict[str, Any]:
        return {
            "id": str(thread.id),
            "user_id": str(user_id),
            "join_timestamp": self.clock.iso(),
            "flags": 0,
        }

    def _members_update(
        self,
        thread: Channel,
        *,
        added: tuple[int, ...] = (),
        removed: tuple[int, ...] = (),
    ) -> None:
        data: dict[str, Any] = {
            "id": str(thread.id),
            "guild_id": str(thread.guild_id),
            "member_count": len(thread.thread_member_ids),
        }
        if added:
            data["added_members"] = [self._thread_member(thread, u) for u in added]
        if removed:
            data["removed_member_ids"] = [str(u) for u in removed]
        self.emu.gateway.dispatch(
            "THREAD_MEMBERS_UPDATE",
            data,
            guild_id=thread.guild_id,
            thread_member_ids=set(added) | set(removed),
        )
        self.publish("thread_members_update", data, channel_id=thread.id)

    def add_thread_member(self, thread: Channel, user_id: int) -> None:
        """Add a member to a thread: refused when archived (50083); the joiner's own sessions
        get THREAD_CREATE, then THREAD_MEMBERS_UPDATE goes out
        (https://discord.com/developers/docs/resources/channel#join-thread and
        #add-thread-member)."""
        meta = thread.thread
        if meta is None:
            raise errors.DiscordError(400, 50024, "Cannot execute action on this channel type")
        if meta.archived:
            raise errors.thread_archived()
        if user_id in thread.thread_member_ids:
            return
        thread.thread_member_ids.add(user_id)
        joiner = next(
            (a for a in self.state.applications.values() if a.bot_user_id == user_id), None
        )
        if joiner is not None:
            payload = self.state.channel_payload(thread)
            payload["member"] = self._thread_member(thread, user_id)
            self.emu.gateway.dispatch(
                "THREAD_CREATE", payload, application_id=joiner.id, guild_id=thread.guild_id
            )
        self._members_update(thread, added=(user_id,))

    def remove_thread_member(self, thread: Channel, user_id: int) -> None:
        """Remove a member (Leave Thread / Remove Thread Member): the thread must not be
        archived (https://discord.com/developers/docs/resources/channel#leave-thread)."""
        meta = thread.thread
        if meta is None:
            raise errors.DiscordError(400, 50024, "Cannot execute action on this channel type")
        if meta.archived:
            raise errors.thread_archived()
        if user_id not in thread.thread_member_ids:
            return
        thread.thread_member_ids.discard(user_id)
        self._members_update(thread, removed=(user_id,))

    def sweep_archives(self) -> None:
        """Archive threads inactive for ``auto_archive_duration`` minutes (virtual time)."""
        now = self.clock.time()
        for channel in list(self.state.channels.values()):
            meta = channel.thread
            if meta is None or meta.archived:
                continue
            if now >= channel.last_activity + meta.auto_archive_duration * 60:
                meta.archived = True
                meta.archive_timestamp = now
                self._thread_update(channel)
