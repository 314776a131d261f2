"""The emulated Discord world: :class:`State` owns every entity (:mod:`discord_emulator.models`)
by id, looks them up, and renders them as the Discord-shaped JSON payloads discord.py 2.7 reads.
No I/O happens here.
"""

from __future__ import annotations

from typing import Any

from .clock import SnowflakeGenerator, VirtualClock
from .models import (
    DM,
    FORUM,
    VOICE,
    Application,
    Channel,
    Guild,
    Interaction,
    Member,
    Message,
    User,
    approximate_member_count,
    emoji_payload,
)


class State:
    """Owns every entity; ids come from the virtual clock's snowflakes."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.snowflakes = SnowflakeGenerator(clock)
        self.users: dict[int, User] = {}
        self.guilds: dict[int, Guild] = {}
        self.channels: dict[int, Channel] = {}
        self.messages: dict[int, Message] = {}
        self.channel_messages: dict[int, list[int]] = {}
        self.applications: dict[int, Application] = {}
        self.interactions: dict[int, Interaction] = {}
        self.interactions_by_token: dict[str, Interaction] = {}
        # (author_id, nonce) -> (message id, virtual time) for enforce_nonce.
        self.nonces: dict[tuple[int, str], tuple[int, float]] = {}
        self.attachment_bytes: dict[int, bytes] = {}
        # Channels and threads deleted through REST or the control API, for reading afterwards.
        self.deleted_channels: dict[int, Channel] = {}

    def new_id(self) -> int:
        return self.snowflakes.next()

    # ----- lookups -----------------------------------------------------------------------
    def app_by_token(self, token: str) -> Application | None:
        for app in self.applications.values():
            if app.token == token:
                return app
        return None

    def member(self, guild_id: int, user_id: int) -> Member | None:
        guild = self.guilds.get(guild_id)
        return guild.members.get(user_id) if guild else None

    def visible_messages(self, channel_id: int) -> list[Message]:
        """Messages a channel endpoint can see: not deleted and not ephemeral."""
        return [
            self.messages[mid]
            for mid in self.channel_messages.get(channel_id, [])
            if not self.messages[mid].deleted and not self.messages[mid].ephemeral
        ]

    # ----- payloads ----------------------------------------------------------------------
    def member_payload(self, member: Member, *, with_user: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "roles": [str(r) for r in member.roles],
            "joined_at": self.clock.iso(member.joined_at),
            "nick": member.nick,
            "avatar": None,
            "banner": None,
            "deaf": False,
            "mute": False,
            "pending": False,
            "flags": 0,
            "premium_since": None,
            "communication_disabled_until": (
                self.clock.iso(member.communication_disabled_until)
                if member.communication_disabled_until is not None
                else None
            ),
        }
        if with_user:
            data["user"] = self.users[member.user_id].payload()
        return data

    def channel_payload(self, channel: Channel) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(channel.id),
            "type": channel.type,
            "flags": 0,
            "last_message_id": str(channel.last_message_id) if channel.last_message_id else None,
        }
        if channel.type == DM:
            # The recipient is the other party (the bot is listed last and left out).
            data["recipients"] = [self.users[channel.recipient_ids[0]].payload()]
            return data
        data.update(
            guild_id=str(channel.guild_id),
            name=channel.name,
            position=channel.position,
            parent_id=str(channel.parent_id) if channel.parent_id else None,
            rate_limit_per_user=channel.rate_limit_per_user,
            nsfw=channel.nsfw,
        )
        if channel.is_thread and channel.thread is not None:
            meta = channel.thread
            data.update(
                owner_id=str(channel.owner_id),
                message_count=channel.message_count,
                member_count=approximate_member_count(channel),
                total_message_sent=channel.total_message_sent,
                thread_metadata={
                    "archived": meta.archived,
                    "auto_archive_duration": meta.auto_archive_duration,
                    "archive_timestamp": self.clock.iso(meta.archive_timestamp),
                    "locked": meta.locked,
                    "invitable": meta.invitable,
                    "create_timestamp": self.clock.iso(meta.create_timestamp),
                },
                applied_tags=[],
            )
        else:
            data.update(
                topic=channel.topic,
                permission_overwrites=[o.payload() for o in channel.overwrites],
                default_auto_archive_duration=1440,
            )
            if channel.type == FORUM:
                data.update(
                    available_tags=[],
                    default_reaction_emoji=None,
                    default_sort_order=None,
                    default_forum_layout=0,
                    default_thread_rate_limit_per_user=0,
                )
            elif channel.type == VOICE:
                # Voice channel objects always carry these (Channel resource: Channel Object).
                data.update(bitrate=64000, user_limit=0, rtc_region=None)
        return data

    def message_payload(self, msg: Message, *, nested: bool = True) -> dict[str, Any]:
        author = self.users[msg.author_id]
        data: dict[str, Any] = {
            "id": str(msg.id),
            "channel_id": str(msg.channel_id),
            "author": author.payload(),
            "content": msg.content,
            "timestamp": self.clock.iso(msg.created_at),
            "edited_timestamp": self.clock.iso(msg.edited_at) if msg.edited_at else None,
            "tts": False,
            "mention_everyone": msg.mention_everyone,
            "mentions": [self.users[u].payload() for u in msg.mention_ids if u in self.users],
            "mention_roles": [str(r) for r in msg.mention_role_ids],
            "attachments": [dict(a) for a in msg.attachments],
            "embeds": [dict(e) for e in msg.embeds],
            "components": [dict(c) for c in msg.components],
            "pinned": msg.pinned_at is not None,
            "type": msg.type,
            "flags": msg.flags,
        }
        if msg.guild_id is not None:
            data["guild_id"] = str(msg.guild_id)
        if msg.nonce is not None:
            data["nonce"] = msg.nonce
        if msg.webhook_id is not None:
            data["webhook_id"] = str(msg.webhook_id)
        if msg.application_id is not None:
            data["application_id"] = str(msg.application_id)
        if msg.interaction_metadata is not None:
            data["interaction_metadata"] = msg.interaction_metadata
        if msg.message_reference is not None:
            data["message_reference"] = msg.message_reference
            # A THREAD_CREATED notice refers to a thread, not a message.
            ref_id = msg.message_reference.get("message_id")
            ref = self.messages.get(int(ref_id)) if ref_id is not None else None
            if ref is not None and not ref.deleted and nested:
                data["referenced_message"] = self.message_payload(ref, nested=False)
        if msg.thread_id is not None and msg.thread_id in self.channels:
            data["thread"] = self.channel_payload(self.channels[msg.thread_id])
        if msg.reactions:
            data["reactions"] = self.reactions_payload(msg)
        return data

    def reactions_payload(self, msg: Message) -> list[dict[str, Any]]:
        """Reaction objects (Message resource: Reaction Structure); ``me`` is about the bot of
        the first application, the one the emulator serves."""
        viewer = next(iter(self.applications.values())).bot_user_id if self.applications else 0
        return [
            {
                "count": len(users),
                "count_details": {"burst": 0, "normal": len(users)},
                "me": viewer in users,
                "me_burst": False,
                "burst_colors": [],
                "emoji": emoji_payload(key),
            }
            for key, users in msg.reactions.items()
        ]

    def gateway_message_payload(self, msg: Message) -> dict[str, Any]:
        """MESSAGE_CREATE/UPDATE also carry a partial ``member`` for guild messages."""
        data = self.message_payload(msg)
        if msg.guild_id is not None:
            member = self.member(msg.guild_id, msg.author_id)
            if member is not None:
                data["member"] = self.member_payload(member, with_user=False)
            # Gateway mentions carry a partial member for guild members (Message Create event).
            for mention in data["mentions"]:
                mentioned = self.member(msg.guild_id, int(mention["id"]))
                if mentioned is not None:
                    mention["member"] = self.member_payload(mentioned, with_user=False)
        return data

    def guild_payload(self, guild: Guild) -> dict[str, Any]:
        return {
            "id": str(guild.id),
            "name": guild.name,
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "banner": None,
            "description": None,
            "owner_id": str(guild.owner_id),
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "roles": [r.payload() for r in guild.roles.values()],
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "application_id": None,
            "system_channel_id": str(guild.system_channel_id) if guild.system_channel_id else None,
            "system_channel_flags": guild.system_channel_flags,
            "rules_channel_id": None,
            "public_updates_channel_id": None,
            "safety_alerts_channel_id": None,
            "vanity_url_code": None,
            "premium_tier": 0,
            "premium_subscription_count": 0,
            "preferred_locale": "en-US",
            "nsfw_level": 0,
            "premium_progress_bar_enabled": False,
            "max_members": 500000,
        }

    def thread_member_payload(self, thread: Channel, user_id: int) -> dict[str, Any]:
        """A thread member object; the emulator keeps no join time, so it is the thread's
        creation."""
        meta = thread.thread
        return {
            "id": str(thread.id),
            "user_id": str(user_id),
            "join_timestamp": self.clock.iso(meta.create_timestamp if meta else None),
            "flags": 0,
        }

    def _with_member(self, thread: Channel, viewer_id: int | None) -> dict[str, Any]:
        data = self.channel_payload(thread)
        if viewer_id is not None and viewer_id in thread.thread_member_ids:
            data["member"] = self.thread_member_payload(thread, viewer_id)
        return data

    def guild_create_payload(self, guild: Guild, viewer_id: int | None = None) -> dict[str, Any]:
        """GUILD_CREATE: the guild plus channels, active threads, roles and members; threads
        the viewer (the receiving bot) is in carry its thread ``member``
        (https://discord.com/developers/docs/topics/threads#syncing-for-the-current-user)."""
        data = self.guild_payload(guild)
        channels = [self.channels[c] for c in guild.channel_ids]
        threads = [
            c
            for c in self.channels.values()
            if c.guild_id == guild.id and c.is_thread and c.thread and not c.thread.archived
        ]
        data.update(
            unavailable=False,
            large=False,
            member_count=len(guild.members),
            joined_at=self.clock.iso(),
            members=[self.member_payload(m) for m in guild.members.values()],
            channels=[self.channel_payload(c) for c in channels],
            threads=[self._with_member(t, viewer_id) for t in threads],
            presences=[],
            voice_states=[],
            stage_instances=[],
            guild_scheduled_events=[],
            soundboard_sounds=[],
        )
        return data
