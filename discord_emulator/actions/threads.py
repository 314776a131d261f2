"""Threads: starting them, their members, unarchiving on activity and archiving after
inactivity (https://discord.com/developers/docs/topics/threads)."""

from __future__ import annotations

from typing import Any

from discord_emulator import errors
from discord_emulator.models import (
    DM,
    FLAG_HAS_THREAD,
    FORUM,
    MSG_RECIPIENT_ADD,
    MSG_RECIPIENT_REMOVE,
    MSG_THREAD_CREATED,
    MSG_THREAD_STARTER_MESSAGE,
    PUBLIC_THREAD,
    Channel,
    Message,
    ThreadMeta,
    approximate_member_count,
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
        self.state.channels[tid] = thread
        payload = self.state.channel_payload(thread)
        payload["newly_created"] = True
        self.emu.gateway.dispatch("THREAD_CREATE", payload, guild_id=parent.guild_id)
        self.publish(
            "thread_create", self.state.channel_payload(thread), channel_id=tid, parent_id=parent.id
        )
        # The creator is the thread's first member, and "a Thread Members Update Gateway Event
        # is always sent when the current user is added to ... a thread" (Threads docs).
        self._add_member(thread, owner_id)
        if from_message is not None:
            self._started_from(from_message, thread)
        elif parent.type != FORUM and thread_type == PUBLIC_THREAD:
            self._thread_created_notice(parent, thread)
        return thread

    def _started_from(self, starter: Message, thread: Channel) -> None:
        """Start Thread from Message "fires a Thread Create and a Message Update": the starter
        now carries its thread. The thread opens with a THREAD_STARTER_MESSAGE that only refers
        to the starter; a public thread started from an older message is also announced in the
        channel (https://discord.com/developers/docs/resources/channel#start-thread-from-message;
        topics/threads#new-message-types)."""
        parent = self.state.channels[starter.channel_id]
        starter.thread_id = thread.id
        starter.flags |= FLAG_HAS_THREAD
        self.announce("MESSAGE_UPDATE", starter)
        self.post_system_message(
            thread,
            starter.author_id,
            MSG_THREAD_STARTER_MESSAGE,
            reference=self._reference({"message_id": str(starter.id)}, reply=False),
        )
        age = self.clock.time() - starter.created_at
        if thread.type == PUBLIC_THREAD and age > self.emu.config.thread_created_notice_age:
            self._thread_created_notice(parent, thread)

    def _thread_created_notice(self, parent: Channel, thread: Channel) -> None:
        """THREAD_CREATED in the parent channel, by the thread's creator: its content is the
        thread's name, its reference the thread (Message resource: Thread Created messages)."""
        reference: dict[str, Any] = {"type": 0, "channel_id": str(thread.id)}
        if thread.guild_id is not None:
            reference["guild_id"] = str(thread.guild_id)
        assert thread.owner_id is not None
        self.post_system_message(
            parent,
            thread.owner_id,
            MSG_THREAD_CREATED,
            content=thread.name or "",
            reference=reference,
        )

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
            "member_count": approximate_member_count(thread),
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

    def _add_member(self, thread: Channel, user_id: int) -> None:
        if user_id not in thread.thread_member_ids:
            thread.thread_member_ids.add(user_id)
            self._members_update(thread, added=(user_id,))

    def join_by_posting(self, thread: Channel, user_id: int) -> None:
        self._add_member(thread, user_id)

    def _writable_members(self, thread: Channel) -> None:
        meta = thread.thread
        if meta is None:
            raise errors.DiscordError(400, 50024, "Cannot execute action on this channel type")
        if meta.archived:
            raise errors.thread_archived()

    def _joined_app(self, thread: Channel, user_id: int) -> None:
        """A bot added to a thread receives THREAD_CREATE with its thread member (Gateway
        Events: Thread Create, "when the current user is added to a thread")."""
        joiner = next(
            (a for a in self.state.applications.values() if a.bot_user_id == user_id), None
        )
        if joiner is not None:
            payload = self.state.channel_payload(thread)
            payload["member"] = self._thread_member(thread, user_id)
            self.emu.gateway.dispatch(
                "THREAD_CREATE", payload, application_id=joiner.id, guild_id=thread.guild_id
            )

    def add_thread_member(self, thread: Channel, user_id: int, *, by: int | None = None) -> None:
        """Add a member to a thread, which must not be archived (50083).

        Joining (``by`` None: Join Thread, or a user's own join) "fires a Thread Members Update
        and a Thread Create", a member's join included. Added by someone else (Add Thread
        Member), a member is left as is; a new one gets THREAD_MEMBERS_UPDATE and a
        RECIPIENT_ADD message by ``by`` in the thread
        (https://discord.com/developers/docs/resources/channel#join-thread, #add-thread-member;
        topics/threads#new-message-types)."""
        self._writable_members(thread)
        by_another = by is not None and by != user_id
        if by_another and user_id in thread.thread_member_ids:
            return
        thread.thread_member_ids.add(user_id)
        self._joined_app(thread, user_id)
        self._members_update(thread, added=(user_id,))
        if by is not None and by_another:
            self.post_system_message(thread, by, MSG_RECIPIENT_ADD, mention_ids=(user_id,))

    def remove_thread_member(self, thread: Channel, user_id: int, *, by: int | None = None) -> None:
        """Remove a member (Leave Thread, or Remove Thread Member ``by`` another user, which
        posts RECIPIENT_REMOVE): the thread must not be archived
        (https://discord.com/developers/docs/resources/channel#leave-thread)."""
        self._writable_members(thread)
        if user_id not in thread.thread_member_ids:
            return
        thread.thread_member_ids.discard(user_id)
        self._members_update(thread, removed=(user_id,))
        if by is not None and by != user_id:
            self.post_system_message(thread, by, MSG_RECIPIENT_REMOVE, mention_ids=(user_id,))

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
