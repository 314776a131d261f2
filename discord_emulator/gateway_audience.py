"""Who hears a gateway event, and what it hears: the session's application and shard, whether
its bot is in the guild, the intent the event needs (List of Intents), View Channel for
message, reaction and pin events, the message content intent, and, without GUILD_MEMBERS, only
its own thread membership (https://discord.com/developers/docs/events/gateway#list-of-intents,
#message-content-intent; gateway-events#thread-members-update).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import permissions as P
from .gateway_sessions import GatewaySession
from .intents import (
    DIRECT_MESSAGE_REACTIONS,
    DIRECT_MESSAGES,
    GUILD_MEMBERS,
    GUILD_MESSAGE_REACTIONS,
    GUILD_MESSAGES,
    GUILDS,
    MESSAGE_CONTENT,
)
from .message_content import redact
from .models import DM
from .state import State

# The intent each guild event needs (https://discord.com/developers/docs/events/gateway#list-of-intents);
# MESSAGE_* events are handled separately (GUILD_MESSAGES or DIRECT_MESSAGES by channel).
EVENT_INTENTS = {
    "GUILD_CREATE": GUILDS,
    "GUILD_UPDATE": GUILDS,
    "GUILD_DELETE": GUILDS,
    "GUILD_ROLE_CREATE": GUILDS,
    "GUILD_ROLE_UPDATE": GUILDS,
    "GUILD_ROLE_DELETE": GUILDS,
    "CHANNEL_CREATE": GUILDS,
    "CHANNEL_UPDATE": GUILDS,
    "CHANNEL_DELETE": GUILDS,
    "THREAD_CREATE": GUILDS,
    "THREAD_UPDATE": GUILDS,
    "THREAD_DELETE": GUILDS,
    "THREAD_LIST_SYNC": GUILDS,
    "THREAD_MEMBER_UPDATE": GUILDS,
    "THREAD_MEMBERS_UPDATE": GUILDS,
    "GUILD_MEMBER_ADD": GUILD_MEMBERS,
    "GUILD_MEMBER_UPDATE": GUILD_MEMBERS,
    "GUILD_MEMBER_REMOVE": GUILD_MEMBERS,
}


@dataclass(frozen=True)
class Dispatch:
    """One event as its sender describes it: to one application only, or to every one; about
    a guild, a channel (of a type), and which users a thread membership change is about."""

    event: str
    data: dict[str, Any]
    application_id: int | None = None
    guild_id: int | None = None
    channel_type: int | None = None
    channel_id: int | None = None
    thread_member_ids: set[int] | None = None


def _can_view(state: State, session: GatewaySession, channel_id: int) -> bool:
    channel = state.channels.get(channel_id)
    if channel is None or channel.type == DM:
        return True
    return P.has(P.channel_permissions(state, channel, session.bot_user_id), P.VIEW_CHANNEL)


def _needed_intent(sent: Dispatch) -> int | None:
    """The intent a session needs for the event, if any."""
    dm = sent.channel_type == DM
    if sent.event.startswith("MESSAGE_REACTION_"):
        return DIRECT_MESSAGE_REACTIONS if dm else GUILD_MESSAGE_REACTIONS
    if sent.event.startswith("MESSAGE_"):
        return DIRECT_MESSAGES if dm else GUILD_MESSAGES
    if sent.event == "CHANNEL_PINS_UPDATE":
        return DIRECT_MESSAGES if dm else GUILDS
    return EVENT_INTENTS.get(sent.event)


def payload_for(state: State, session: GatewaySession, sent: Dispatch) -> dict[str, Any] | None:
    """What ``session`` receives of ``sent``, or None when it receives nothing."""
    if sent.application_id is not None and session.application_id != sent.application_id:
        return None
    shard_guild = sent.guild_id
    if shard_guild is None and sent.data.get("guild_id") is not None:
        shard_guild = int(sent.data["guild_id"])
    if not session.owns_guild(shard_guild):
        return None
    if sent.guild_id is not None:
        guild = state.guilds.get(sent.guild_id)
        if guild is None or session.bot_user_id not in guild.members:
            return None
    needed = _needed_intent(sent)
    if needed is not None and not session.intents & needed:
        return None
    channel_event = sent.event.startswith("MESSAGE_") or sent.event == "CHANNEL_PINS_UPDATE"
    if (
        channel_event
        and sent.channel_id is not None
        and not _can_view(state, session, sent.channel_id)
    ):
        # Message, reaction and pin events come only from channels the bot can view
        # (https://discord.com/developers/docs/topics/permissions: "VIEW_CHANNEL ... read
        # messages").
        return None
    if (
        sent.event == "THREAD_MEMBERS_UPDATE"
        and sent.thread_member_ids is not None
        and not session.intents & GUILD_MEMBERS
        and session.bot_user_id not in sent.thread_member_ids
    ):
        # Without GUILD_MEMBERS a bot only hears about its own thread membership.
        return None
    if sent.event.startswith("MESSAGE_") and not sent.event.startswith("MESSAGE_REACTION_"):
        return redact(
            sent.data,
            session.bot_user_id,
            has_intent=bool(session.intents & MESSAGE_CONTENT),
            in_dm=sent.channel_type == DM,
        )
    return sent.data
