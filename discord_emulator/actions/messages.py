"""Messages: create, edit, delete and bulk delete, with their attachments, replies and
mentions (https://discord.com/developers/docs/resources/message)."""

from __future__ import annotations

from typing import Any

from discord_emulator import errors, mentions
from discord_emulator.models import (
    MSG_DEFAULT,
    MSG_REPLY,
    MSG_THREAD_STARTER_MESSAGE,
    SENT_TYPES,
    Channel,
    Message,
)

from .base import ActionsBase

# Flags a sender may set (SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, IS_COMPONENTS_V2); the
# ephemeral flag is only honoured on interaction responses.
SETTABLE_FLAGS = (1 << 2) | (1 << 12) | (1 << 15)
# https://discord.com/developers/docs/resources/message#create-message: a nonce is enforced
# "within the past few minutes".
NONCE_WINDOW = 300.0
# Message types that are not system messages (DEFAULT, REPLY, CHAT_INPUT_COMMAND,
# THREAD_STARTER_MESSAGE, CONTEXT_MENU_COMMAND): only these can be replied to.
REPLYABLE_TYPES = (0, 19, 20, 21, 23)


class UploadedFile:
    """A file part of a multipart/form-data request (``files[n]``)."""

    def __init__(self, index: int, filename: str, content_type: str | None, data: bytes) -> None:
        self.index = index
        self.filename = filename
        self.content_type = content_type
        self.data = data


class MessageActions(ActionsBase):
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
        reference: dict[str, Any] | None = None,
        mention_ids: list[int] | None = None,
    ) -> Message:
        """Post a message. ``reference`` is a message_reference Discord itself builds (a system
        message's), taken as it is; ``mention_ids`` replaces what the content would ping."""
        now = self.clock.time()
        nonce = payload.get("nonce")
        if nonce is not None and payload.get("enforce_nonce"):
            hit = self.state.nonces.get((author_id, str(nonce)))
            if hit is not None and now - hit[1] < NONCE_WINDOW:
                existing = self.state.messages.get(hit[0])
                if existing is not None and not existing.deleted:
                    return existing
        if reference is None:
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
        if mention_ids is not None:
            msg.mention_ids = list(mention_ids)
        msg.snapshot(now)
        self.state.messages[mid] = msg
        self.state.channel_messages.setdefault(channel.id, []).append(mid)
        if nonce is not None:
            self.state.nonces[(author_id, str(nonce))] = (mid, now)
        if not msg.ephemeral:
            channel.last_message_id = mid
            channel.last_activity = now
            if channel.is_thread:
                # message_count leaves out "the initial message" (Channel Object).
                if msg_type != MSG_THREAD_STARTER_MESSAGE:
                    channel.message_count += 1
                    channel.total_message_sent += 1
                if msg_type in SENT_TYPES:
                    self.join_by_posting(channel, author_id)
        self.announce("MESSAGE_CREATE", msg, dispatch=dispatch)
        return msg

    def post_system_message(
        self,
        channel: Channel,
        author_id: int,
        msg_type: int,
        *,
        content: str = "",
        reference: dict[str, Any] | None = None,
        mention_ids: tuple[int, ...] = (),
    ) -> Message:
        """A message Discord posts itself (a thread created, a member added, a name changed):
        its content pings nobody; it mentions only ``mention_ids``."""
        return self.create_message(
            channel,
            author_id,
            {"content": content, "allowed_mentions": {"parse": []}},
            msg_type=msg_type,
            reference=reference,
            mention_ids=list(mention_ids),
        )

    def join_by_posting(self, thread: Channel, user_id: int) -> None:
        """Posting in a thread makes the author a member (announced by the thread actions)."""
        thread.thread_member_ids.add(user_id)

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
        self.announce("MESSAGE_UPDATE", msg)
        return msg

    def announce(self, event: str, msg: Message, *, dispatch: bool = True) -> None:
        """Send MESSAGE_CREATE or MESSAGE_UPDATE for ``msg`` to the bots (an ephemeral message
        reaches none: it lives in its interaction) and publish it to tests and viewers."""
        channel = self.state.channels[msg.channel_id]
        if dispatch and not msg.ephemeral:
            self.emu.gateway.dispatch(
                event,
                self.state.gateway_message_payload(msg),
                guild_id=channel.guild_id,
                channel_type=channel.type,
                channel_id=channel.id,
            )
        self.publish(
            event.lower(),
            self.state.message_payload(msg),
            channel_id=channel.id,
            message_id=msg.id,
            ephemeral=msg.ephemeral,
        )

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
