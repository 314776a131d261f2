"""State mutations shared by the REST handlers and the control API.

Each action changes :class:`~discord_emulator.state.State`, sends the gateway dispatch Discord
would send (MESSAGE_CREATE, THREAD_UPDATE, ...) and publishes an :class:`EmulatorEvent` so tests
and live viewers see it. Rules that depend only on the entity (archived/locked threads, nonces,
thread-per-message) live here; permission checks on the acting bot live in the REST handlers.
"""

from __future__ import annotations

from typing import Any, Protocol

from . import errors, mentions
from .clock import VirtualClock
from .events import EmulatorEvent, EventHub
from .gateway import Gateway
from .state import (
    DM,
    FLAG_HAS_THREAD,
    FORUM,
    MSG_CHANNEL_PINNED_MESSAGE,
    MSG_DEFAULT,
    MSG_REPLY,
    MSG_THREAD_CREATED,
    PRIVATE_THREAD,
    PUBLIC_THREAD,
    Channel,
    Guild,
    Member,
    Message,
    State,
    ThreadMeta,
    emoji_payload,
)

# Flags a sender may set (SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, IS_COMPONENTS_V2); the
# ephemeral flag is only honoured on interaction responses.
SETTABLE_FLAGS = (1 << 2) | (1 << 12) | (1 << 15)
# https://discord.com/developers/docs/resources/message#create-message: a nonce is enforced
# "within the past few minutes".
NONCE_WINDOW = 300.0
AUTO_ARCHIVE_DURATIONS = (60, 1440, 4320, 10080)
# Message types that are not system messages (DEFAULT, REPLY, CHAT_INPUT_COMMAND,
# THREAD_STARTER_MESSAGE, CONTEXT_MENU_COMMAND): only these can be replied to.
REPLYABLE_TYPES = (0, 19, 20, 21, 23)
# "Maximum number of reactions reached (20)": different emojis on one message (JSON error 30010).
MAX_REACTION_EMOJIS = 20
# "Maximum number of pins reached for the channel (250)" (JSON error 30003).
MAX_PINS = 250


class UploadedFile:
    """A file part of a multipart/form-data request (``files[n]``)."""

    def __init__(self, index: int, filename: str, content_type: str | None, data: bytes) -> None:
        self.index = index
        self.filename = filename
        self.content_type = content_type
        self.data = data


class ActionsHost(Protocol):
    """What the actions need of the emulator: its world, clock, event hub, gateway and URL."""

    clock: VirtualClock
    state: State
    events: EventHub
    gateway: Gateway

    @property
    def base_url(self) -> str: ...


class Actions:
    def __init__(self, emu: ActionsHost) -> None:
        self.emu = emu
        self.state = emu.state
        self.clock = emu.clock

    def publish(self, kind: str, data: dict[str, Any], **extra: Any) -> None:
        self.emu.events.publish(EmulatorEvent(kind, data, self.clock.time(), extra))

    # ----- messages ----------------------------------------------------------------------
    def _attachments(
        self,
        channel_id: int,
        payload: dict[str, Any],
        files: list[UploadedFile],
        existing: list[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        by_index = {f.index: f for f in files}
        result: list[dict[str, Any]] = []
        kept = {str(a["id"]): a for a in existing or []}
        described = payload.get("attachments")
        if described is None:
            described = [] if existing is None else list(kept.values())
            described = described + [
                {"id": f.index, "filename": f.filename}
                for f in files
                if str(f.index) not in {str(d["id"]) for d in described}
            ]
        for item in described:
            key = str(item.get("id"))
            if key in kept:  # an existing attachment (snowflake id) kept across an edit
                result.append(kept[key])
                continue
            upload = by_index.get(int(key)) if key.isdigit() else None
            if upload is None:
                continue
            name = item.get("filename") or upload.filename
            att = self.store_attachment(channel_id, name, upload.data, upload.content_type)
            if item.get("description"):
                att["description"] = item["description"]
            result.append(att)
        return result

    def store_attachment(
        self, channel_id: int, filename: str, data: bytes, content_type: str | None
    ) -> dict[str, Any]:
        """Keep an uploaded file, served at the attachment object's ``url``."""
        att_id = self.state.new_id()
        self.state.attachment_bytes[att_id] = data
        url = f"{self.emu.base_url}/attachments/{channel_id}/{att_id}/{filename}"
        return {
            "id": str(att_id),
            "filename": filename,
            "size": len(data),
            "url": url,
            "proxy_url": url,
            "content_type": content_type or "application/octet-stream",
        }

    def _reference(self, raw: Any, *, reply: bool = True) -> dict[str, Any] | None:
        """A reply's message_reference; an unknown target is a form error unless
        ``fail_if_not_exists`` is false (Message Reference docs)."""
        if not isinstance(raw, dict) or raw.get("message_id") is None:
            return None
        target = self.state.messages.get(int(raw["message_id"]))
        if target is None or target.deleted:
            if raw.get("fail_if_not_exists", True):
                raise errors.invalid_form_body(
                    errors.field_error(
                        ["message_reference"],
                        "MESSAGE_REFERENCE_UNKNOWN_MESSAGE",
                        "Unknown message",
                    )
                )
            return None
        if reply and target.type not in REPLYABLE_TYPES:
            # "The referenced message must exist and cannot be a system message"
            # (https://discord.com/developers/docs/resources/message#create-message); the
            # error code is observed.
            raise errors.invalid_form_body(
                errors.field_error(
                    ["message_reference"],
                    "REPLIES_CANNOT_REPLY_TO_SYSTEM_MESSAGE",
                    "Cannot reply to a system message",
                )
            )
        ref: dict[str, Any] = {
            "type": 0,
            "message_id": str(target.id),
            "channel_id": str(target.channel_id),
        }
        if target.guild_id is not None:
            ref["guild_id"] = str(target.guild_id)
        return ref

    def _set_mentions(
        self,
        msg: Message,
        channel: Channel,
        allowed: dict[str, Any] | None,
        replied_author_id: int | None,
    ) -> None:
        found = mentions.compute(
            self.state, channel, msg.author_id, msg.content, allowed, replied_author_id
        )
        msg.mention_ids = found.users
        msg.mention_role_ids = found.roles
        msg.mention_everyone = found.everyone

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

    def create_message(
        self,
        channel: Channel,
        author_id: int,
        payload: dict[str, Any],
        files: list[UploadedFile] | None = None,
        *,
        msg_type: int = MSG_DEFAULT,
        extra_flags: int = 0,
        webhook_id: int | None = None,
        application_id: int | None = None,
        interaction_metadata: dict[str, Any] | None = None,
        interaction_id: int | None = None,
        message_id: int | None = None,
        dispatch: bool = True,
    ) -> Message:
        now = self.clock.time()
        nonce = payload.get("nonce")
        if nonce is not None and payload.get("enforce_nonce"):
            hit = self.state.nonces.get((author_id, str(nonce)))
            if hit is not None and now - hit[1] < NONCE_WINDOW:
                existing = self.state.messages.get(hit[0])
                if existing is not None and not existing.deleted:
                    return existing
        reference = self._reference(
            payload.get("message_reference"), reply=msg_type in (MSG_DEFAULT, MSG_REPLY)
        )
        if reference is not None and msg_type == MSG_DEFAULT:
            msg_type = MSG_REPLY
        mid = message_id if message_id is not None else self.state.new_id()
        flags = (int(payload.get("flags") or 0) & SETTABLE_FLAGS) | extra_flags
        msg = Message(
            id=mid,
            channel_id=channel.id,
            guild_id=channel.guild_id,
            author_id=author_id,
            content=str(payload.get("content") or ""),
            embeds=list(payload.get("embeds") or []),
            components=list(payload.get("components") or []),
            flags=flags,
            type=msg_type,
            created_at=now,
            nonce=str(nonce) if nonce is not None else None,
            webhook_id=webhook_id,
            application_id=application_id,
            interaction_metadata=interaction_metadata,
            interaction_id=interaction_id,
            message_reference=reference,
        )
        msg.attachments = self._attachments(channel.id, payload, files or [])
        # Only a reply pings the author it answers (a pin notice refers without pinging).
        replied = (
            self.state.messages[int(reference["message_id"])]
            if reference and msg_type == MSG_REPLY
            else None
        )
        self._set_mentions(
            msg, channel, payload.get("allowed_mentions"), replied.author_id if replied else None
        )
        msg.snapshot(now)
        self.state.messages[mid] = msg
        self.state.channel_messages.setdefault(channel.id, []).append(mid)
        if nonce is not None:
            self.state.nonces[(author_id, str(nonce))] = (mid, now)
        if not msg.ephemeral:
            channel.last_message_id = mid
            channel.last_activity = now
            if channel.is_thread:
                channel.message_count += 1
                channel.total_message_sent += 1
                channel.thread_member_ids.add(author_id)
        if dispatch and not msg.ephemeral:
            self.emu.gateway.dispatch(
                "MESSAGE_CREATE",
                self.state.gateway_message_payload(msg),
                guild_id=channel.guild_id,
                channel_type=channel.type,
                author_id=author_id,
                channel_id=channel.id,
            )
        self.publish(
            "message_create",
            self.state.message_payload(msg),
            channel_id=channel.id,
            message_id=mid,
            ephemeral=msg.ephemeral,
        )
        return msg

    def edit_message(
        self,
        msg: Message,
        payload: dict[str, Any],
        files: list[UploadedFile] | None = None,
        *,
        clear_flags: int = 0,
    ) -> Message:
        now = self.clock.time()
        if "content" in payload:
            msg.content = str(payload["content"] or "")
        if "embeds" in payload:
            msg.embeds = list(payload["embeds"] or [])
        if "components" in payload:
            msg.components = list(payload["components"] or [])
        if "attachments" in payload or files:
            msg.attachments = self._attachments(
                msg.channel_id, payload, files or [], msg.attachments
            )
        channel = self.state.channels[msg.channel_id]
        if "content" in payload:
            # Discord re-parses mentions when the content is edited (Edit Message docs); a
            # reply keeps pinging its author only if it did before.
            ref = msg.message_reference
            replied = self.state.messages.get(int(ref["message_id"])) if ref else None
            keep_reply = replied is not None and replied.author_id in msg.mention_ids
            self._set_mentions(
                msg,
                channel,
                payload.get("allowed_mentions"),
                replied.author_id if replied is not None and keep_reply else None,
            )
        if "flags" in payload and payload["flags"] is not None:
            keep = msg.flags & ~SETTABLE_FLAGS
            msg.flags = keep | (int(payload["flags"]) & SETTABLE_FLAGS)
        msg.flags &= ~clear_flags
        msg.edited_at = now
        msg.snapshot(now)
        if not msg.ephemeral:
            self.emu.gateway.dispatch(
                "MESSAGE_UPDATE",
                self.state.gateway_message_payload(msg),
                guild_id=channel.guild_id,
                channel_type=channel.type,
                author_id=msg.author_id,
                channel_id=channel.id,
            )
        self.publish(
            "message_update",
            self.state.message_payload(msg),
            channel_id=msg.channel_id,
            message_id=msg.id,
            ephemeral=msg.ephemeral,
        )
        return msg

    def delete_message(self, msg: Message) -> None:
        msg.deleted_at = self.clock.time()
        channel = self.state.channels[msg.channel_id]
        data: dict[str, Any] = {"id": str(msg.id), "channel_id": str(msg.channel_id)}
        if msg.guild_id is not None:
            data["guild_id"] = str(msg.guild_id)
        if not msg.ephemeral:
            if channel.is_thread:
                channel.message_count = max(0, channel.message_count - 1)
            self.emu.gateway.dispatch(
                "MESSAGE_DELETE",
                data,
                guild_id=channel.guild_id,
                channel_type=channel.type,
                channel_id=channel.id,
            )
        self.publish("message_delete", data, channel_id=msg.channel_id, message_id=msg.id)

    # ----- channels ----------------------------------------------------------------------
    def add_channel(self, guild: Guild, channel: Channel) -> None:
        """A new guild channel: stored, then CHANNEL_CREATE (GUILDS intent)."""
        self.state.channels[channel.id] = channel
        guild.channel_ids.append(channel.id)
        payload = self.state.channel_payload(channel)
        self.emu.gateway.dispatch("CHANNEL_CREATE", payload, guild_id=guild.id)
        self.publish("channel_create", payload, guild_id=guild.id)

    # ----- members -----------------------------------------------------------------------
    def set_member_roles(self, guild_id: int, user_id: int, roles: list[int]) -> None:
        """Change a member's roles: GUILD_MEMBER_UPDATE (GUILD_MEMBERS intent) with the member
        and ``guild_id`` (https://discord.com/developers/docs/events/gateway-events#guild-member-update)."""
        member = self.state.guilds[guild_id].members[user_id]
        if member.roles == roles:
            return
        member.roles = roles
        self.member_updated(member)

    def member_updated(self, member: Member) -> None:
        """GUILD_MEMBER_UPDATE (GUILD_MEMBERS intent) with the whole member and ``guild_id``."""
        data = self.state.member_payload(member)
        data["guild_id"] = str(member.guild_id)
        self.emu.gateway.dispatch("GUILD_MEMBER_UPDATE", data, guild_id=member.guild_id)
        self.publish("guild_member_update", data, guild_id=member.guild_id)

    # ----- pins --------------------------------------------------------------------------
    # https://discord.com/developers/docs/resources/message#pin-message; Gateway: Channel Pins
    # Update. Pinning posts a CHANNEL_PINNED_MESSAGE system message that refers to the pin.
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

    def bulk_delete(self, channel: Channel, messages: list[Message]) -> None:
        """Delete several messages at once: one MESSAGE_DELETE_BULK."""
        now = self.clock.time()
        for msg in messages:
            msg.deleted_at = now
            if channel.is_thread:
                channel.message_count = max(0, channel.message_count - 1)
        data: dict[str, Any] = {
            "ids": [str(m.id) for m in messages],
            "channel_id": str(channel.id),
        }
        if channel.guild_id is not None:
            data["guild_id"] = str(channel.guild_id)
        self.emu.gateway.dispatch(
            "MESSAGE_DELETE_BULK",
            data,
            guild_id=channel.guild_id,
            channel_type=channel.type,
            channel_id=channel.id,
        )
        for msg in messages:
            self.publish(
                "message_delete",
                {"id": str(msg.id), "channel_id": str(channel.id)},
                channel_id=channel.id,
                message_id=msg.id,
            )

    # ----- reactions ---------------------------------------------------------------------
    # https://discord.com/developers/docs/resources/message#create-reaction and the Message
    # Reaction Add/Remove/Remove All/Remove Emoji gateway events.
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

    # ----- threads -----------------------------------------------------------------------
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

    def update_channel(self, channel: Channel, changes: dict[str, Any]) -> Channel:
        meta = channel.thread
        if changes.get("name"):
            channel.name = str(changes["name"])
        if "topic" in changes and not channel.is_thread:
            channel.topic = changes["topic"]
        if "rate_limit_per_user" in changes:
            channel.rate_limit_per_user = int(changes["rate_limit_per_user"] or 0)
        unarchived = False
        if meta is not None:
            if "archived" in changes and changes["archived"] is not None:
                archived = bool(changes["archived"])
                unarchived = meta.archived and not archived
                if archived != meta.archived:
                    meta.archived = archived
                    meta.archive_timestamp = self.clock.time()
                    if not archived:
                        channel.last_activity = self.clock.time()
            if "locked" in changes and changes["locked"] is not None:
                meta.locked = bool(changes["locked"])
            if changes.get("auto_archive_duration"):
                meta.auto_archive_duration = int(changes["auto_archive_duration"])
            if "invitable" in changes and changes["invitable"] is not None:
                meta.invitable = bool(changes["invitable"])
            self._thread_update(channel)
            if unarchived:
                self._unarchived(channel)
        else:
            payload = self.state.channel_payload(channel)
            self.emu.gateway.dispatch("CHANNEL_UPDATE", payload, guild_id=channel.guild_id)
            self.publish("channel_update", payload, channel_id=channel.id)
        return channel

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

    def delete_channel(self, channel: Channel) -> None:
        """Delete a channel (with its threads) or a thread: CHANNEL_DELETE or THREAD_DELETE
        (https://discord.com/developers/docs/resources/channel#deleteclose-channel). Its
        messages are gone on Discord; here they stay in ``history`` marked deleted."""
        doomed = [channel] + [
            c for c in self.state.channels.values() if c.parent_id == channel.id and c.is_thread
        ]
        now = self.clock.time()
        for ch in doomed:
            self.state.channels.pop(ch.id, None)
            self.state.deleted_channels[ch.id] = ch
            for mid in self.state.channel_messages.get(ch.id, []):
                msg = self.state.messages[mid]
                if msg.deleted_at is None:
                    msg.deleted_at = now
            if ch.guild_id is not None:
                guild = self.state.guilds.get(ch.guild_id)
                if guild is not None and ch.id in guild.channel_ids:
                    guild.channel_ids.remove(ch.id)
        if channel.is_thread:
            data: dict[str, Any] = {
                "id": str(channel.id),
                "guild_id": str(channel.guild_id),
                "parent_id": str(channel.parent_id),
                "type": channel.type,
            }
            self.emu.gateway.dispatch("THREAD_DELETE", data, guild_id=channel.guild_id)
            self.publish("thread_delete", data, channel_id=channel.id)
        else:
            data = self.state.channel_payload(channel)
            self.emu.gateway.dispatch("CHANNEL_DELETE", data, guild_id=channel.guild_id)
            self.publish("channel_delete", data, channel_id=channel.id)

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


__all__ = ["PRIVATE_THREAD", "PUBLIC_THREAD", "Actions", "UploadedFile"]
