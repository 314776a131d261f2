"""The emulated Discord world's entities: users, guilds, roles, channels, threads, messages,
applications, interactions, as plain dataclasses, with the constants of their types and flags.

:class:`~discord_emulator.state.State` owns them and renders them as Discord's JSON. Every
message keeps the full list of its versions, so tests can assert the sequence of edits of a
progress message. No I/O happens here.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, field
from typing import Any

from .intents import PRIVILEGED

# https://discord.com/developers/docs/resources/channel#channel-object-channel-types
TEXT, DM, VOICE, CATEGORY, NEWS = 0, 1, 2, 4, 5
ANNOUNCEMENT_THREAD, PUBLIC_THREAD, PRIVATE_THREAD, FORUM = 10, 11, 12, 15
THREAD_TYPES = (PUBLIC_THREAD, PRIVATE_THREAD, ANNOUNCEMENT_THREAD)

# https://discord.com/developers/docs/resources/message#message-object-message-flags
FLAG_HAS_THREAD = 1 << 5
FLAG_EPHEMERAL = 1 << 6
FLAG_LOADING = 1 << 7

# https://discord.com/developers/docs/resources/message#message-object-message-types
MSG_DEFAULT, MSG_THREAD_CREATED, MSG_REPLY, MSG_CHAT_INPUT_COMMAND = 0, 18, 19, 20
MSG_RECIPIENT_ADD, MSG_RECIPIENT_REMOVE, MSG_CHANNEL_NAME_CHANGE = 1, 2, 4
MSG_CHANNEL_PINNED_MESSAGE, MSG_USER_JOIN = 6, 7
MSG_THREAD_STARTER_MESSAGE, MSG_CONTEXT_MENU_COMMAND = 21, 23
# The types a user or an app sends; every other type is a system message Discord posts.
SENT_TYPES = (MSG_DEFAULT, MSG_REPLY, MSG_CHAT_INPUT_COMMAND, MSG_CONTEXT_MENU_COMMAND)

# https://discord.com/developers/docs/resources/guild#guild-object-system-channel-flags
SUPPRESS_JOIN_NOTIFICATIONS = 1 << 0

# Application flags for an unverified bot with all privileged intents switched on
# (GATEWAY_PRESENCE_LIMITED, GATEWAY_GUILD_MEMBERS_LIMITED, GATEWAY_MESSAGE_CONTENT_LIMITED).
DEFAULT_APP_FLAGS = (1 << 13) | (1 << 15) | (1 << 19)


@dataclass
class User:
    id: int
    username: str
    bot: bool = False
    global_name: str | None = None
    avatar: str | None = None
    # The user's privacy setting "Allow direct messages from server members".
    accepts_dms: bool = True

    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "username": self.username,
            "discriminator": "0",
            "global_name": self.global_name,
            "avatar": self.avatar,
            "public_flags": 0,
            "flags": 0,
        }
        if self.bot:
            data["bot"] = True
        return data


@dataclass
class Role:
    id: int
    guild_id: int
    name: str
    permissions: int
    position: int = 0
    color: int = 0
    hoist: bool = False
    managed: bool = False
    mentionable: bool = False

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "permissions": str(self.permissions),
            "position": self.position,
            "color": self.color,
            "colors": {
                "primary_color": self.color,
                "secondary_color": None,
                "tertiary_color": None,
            },
            "hoist": self.hoist,
            "managed": self.managed,
            "mentionable": self.mentionable,
            "icon": None,
            "unicode_emoji": None,
            "flags": 0,
        }


@dataclass
class Member:
    user_id: int
    guild_id: int
    roles: list[int]
    joined_at: float
    nick: str | None = None
    # When the member's timeout ends (Unix seconds), or None: not timed out.
    communication_disabled_until: float | None = None

    def timed_out(self, now: float) -> bool:
        until = self.communication_disabled_until
        return until is not None and until > now


@dataclass
class Overwrite:
    """A channel permission overwrite; ``type`` 0 = role, 1 = member."""

    id: int
    type: int
    allow: int = 0
    deny: int = 0

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "type": self.type,
            "allow": str(self.allow),
            "deny": str(self.deny),
        }


@dataclass
class Guild:
    id: int
    name: str
    owner_id: int
    roles: dict[int, Role] = field(default_factory=dict)
    members: dict[int, Member] = field(default_factory=dict)
    channel_ids: list[int] = field(default_factory=list)
    # Where Discord posts guild notices such as member joins (None: nowhere), and which of
    # them it leaves out (SUPPRESS_JOIN_NOTIFICATIONS, ...).
    system_channel_id: int | None = None
    system_channel_flags: int = 0


@dataclass
class ThreadMeta:
    archived: bool = False
    auto_archive_duration: int = 1440  # minutes: 60, 1440, 4320 or 10080
    archive_timestamp: float = 0.0
    locked: bool = False
    invitable: bool = True
    create_timestamp: float = 0.0


@dataclass
class Channel:
    id: int
    type: int
    guild_id: int | None
    name: str | None = None
    parent_id: int | None = None
    position: int = 0
    topic: str | None = None
    overwrites: list[Overwrite] = field(default_factory=list)
    recipient_ids: list[int] = field(default_factory=list)
    owner_id: int | None = None
    thread: ThreadMeta | None = None
    last_message_id: int | None = None
    message_count: int = 0
    total_message_sent: int = 0
    last_activity: float = 0.0
    thread_member_ids: set[int] = field(default_factory=set)
    rate_limit_per_user: int = 0
    nsfw: bool = False

    @property
    def is_thread(self) -> bool:
        return self.type in THREAD_TYPES


@dataclass
class MessageVersion:
    """One state of a message: as created, then after every edit (``at`` = virtual time)."""

    at: float
    content: str
    embeds: list[dict[str, Any]]
    components: list[dict[str, Any]]
    attachments: list[dict[str, Any]]
    flags: int


@dataclass
class Message:
    id: int
    channel_id: int
    guild_id: int | None
    author_id: int
    content: str = ""
    embeds: list[dict[str, Any]] = field(default_factory=list)
    components: list[dict[str, Any]] = field(default_factory=list)
    attachments: list[dict[str, Any]] = field(default_factory=list)
    flags: int = 0
    type: int = MSG_DEFAULT
    created_at: float = 0.0
    edited_at: float | None = None
    nonce: str | None = None
    webhook_id: int | None = None
    application_id: int | None = None
    interaction_metadata: dict[str, Any] | None = None
    interaction_id: int | None = None
    thread_id: int | None = None
    message_reference: dict[str, Any] | None = None
    # Who the message pings, computed from content and allowed_mentions on create and edit.
    mention_ids: list[int] = field(default_factory=list)
    mention_role_ids: list[int] = field(default_factory=list)
    mention_everyone: bool = False
    # Reactions: emoji key ("👍", or "name:id" for a custom emoji) -> ids of the users who
    # reacted with it, in order.
    reactions: dict[str, list[int]] = field(default_factory=dict)
    pinned_at: float | None = None
    deleted_at: float | None = None
    versions: list[MessageVersion] = field(default_factory=list)

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & FLAG_EPHEMERAL)

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None

    def snapshot(self, at: float) -> None:
        self.versions.append(
            MessageVersion(
                at=at,
                content=self.content,
                embeds=[dict(e) for e in self.embeds],
                components=[dict(c) for c in self.components],
                attachments=[dict(a) for a in self.attachments],
                flags=self.flags,
            )
        )


@dataclass
class Application:
    id: int
    name: str
    bot_user_id: int
    owner_id: int
    token: str
    flags: int = DEFAULT_APP_FLAGS
    # The privileged intents switched on in the developer portal (GUILD_MEMBERS,
    # GUILD_PRESENCES, MESSAGE_CONTENT bits); True or False means all or none of them.
    privileged_intents: int = PRIVILEGED
    global_commands: list[dict[str, Any]] = field(default_factory=list)
    guild_commands: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.privileged_intents, bool):
            self.privileged_intents = PRIVILEGED if self.privileged_intents else 0


@dataclass
class Interaction:
    """An interaction sent to the bot and everything the bot answered to it."""

    id: int
    token: str
    application_id: int
    type: int
    data: dict[str, Any]
    guild_id: int | None
    channel_id: int
    user_id: int
    created_at: float
    message_id: int | None = None  # the message a component was clicked on
    response_type: int | None = None
    responded_at: float | None = None
    original_message_id: int | None = None
    followup_ids: list[int] = field(default_factory=list)
    autocomplete_choices: list[dict[str, Any]] | None = None
    modal: dict[str, Any] | None = None


def approximate_member_count(thread: Channel) -> int:
    """A thread's ``member_count``: it "stops counting at 50" (Threads: Thread Fields)."""
    return min(len(thread.thread_member_ids), 50)


def emoji_payload(key: str) -> dict[str, Any]:
    """A partial emoji object from a reaction key: ``{"id": None, "name": "👍"}``."""
    name, _, emoji_id = key.partition(":")
    return {"id": emoji_id or None, "name": name}


def make_token(bot_id: int) -> str:
    """A token shaped like Discord's: base64(bot id).timestamp-ish.hmac-ish."""
    first = base64.b64encode(str(bot_id).encode()).decode().rstrip("=")
    return f"{first}.{secrets.token_urlsafe(5)}.{secrets.token_urlsafe(28)}"
