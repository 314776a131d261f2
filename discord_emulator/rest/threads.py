"""Threads: starting them (from a message, without one, a forum post), their members (join,
leave, add, remove, get, list) and the lists of active and archived threads
(https://discord.com/developers/docs/resources/channel#start-thread-from-message,
#start-thread-without-message, #start-thread-in-forum-or-media-channel, #join-thread,
#add-thread-member, #leave-thread, #remove-thread-member, #get-thread-member,
#list-thread-members, #list-public-archived-threads, #list-private-archived-threads,
#list-joined-private-archived-threads; https://discord.com/developers/docs/resources/guild#list-active-guild-threads).

Get Thread Member answers 404 / 10007 for a non-member. List Thread Members needs the
GUILD_MEMBERS privileged intent enabled for the application (else 403 / 50001, as List Guild
Members), ``limit`` 1-100. Archived public threads need Read Message History; archived private
threads also Manage Threads; joined private archived threads need Read Message History (403 /
50013). The emulator keeps no join time per member: ``join_timestamp`` is the thread's creation.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from aiohttp import web

from discord_emulator import errors
from discord_emulator import permissions as P
from discord_emulator.hub import Hub
from discord_emulator.models import (
    ANNOUNCEMENT_THREAD,
    DM,
    FORUM,
    NEWS,
    PRIVATE_THREAD,
    PUBLIC_THREAD,
    Channel,
)
from discord_emulator.state import State
from discord_emulator.validation import validate_message

from .common import (
    acting_app,
    bot_channel,
    bot_guild,
    emu_of,
    get_message,
    json_response,
    message_json,
    no_content,
    query_limit,
    read_body,
    require_members_intent,
    snowflake,
)


def _thread_member(
    state: State, thread: Channel, user_id: int, with_member: bool
) -> dict[str, Any]:
    meta = thread.thread
    data: dict[str, Any] = {
        "id": str(thread.id),
        "user_id": str(user_id),
        "join_timestamp": state.clock.iso(meta.create_timestamp if meta else None),
        "flags": 0,
    }
    member = state.member(thread.guild_id, user_id) if thread.guild_id else None
    if with_member and member is not None:
        data["member"] = state.member_payload(member)
    return data


def _thread_of(request: web.Request) -> tuple[Channel, int]:
    channel, bot_id = bot_channel(request)
    if not channel.is_thread:
        # Thread endpoints on a channel that is not a thread (observed).
        raise errors.DiscordError(400, 50024, "Cannot execute action on this channel type")
    return channel, bot_id


def _with_member(request: web.Request) -> bool:
    return request.query.get("with_member") in ("true", "True", "1")


async def get_thread_member(request: web.Request) -> web.Response:
    emu = emu_of(request)
    thread, _ = _thread_of(request)
    user_id = snowflake(request, "user_id")
    if user_id not in thread.thread_member_ids:
        raise errors.unknown_member()
    return json_response(_thread_member(emu.state, thread, user_id, _with_member(request)))


async def list_thread_members(request: web.Request) -> web.Response:
    emu = emu_of(request)
    thread, _ = _thread_of(request)
    require_members_intent(request)
    limit = query_limit(request, 100, 100)
    after = int(request.query.get("after", 0))
    ids = sorted(u for u in thread.thread_member_ids if u > after)[:limit]
    with_member = _with_member(request)
    return json_response([_thread_member(emu.state, thread, u, with_member) for u in ids])


def _archived(
    request: web.Request, channel: Channel, thread_type: int, *, joined_by: int | None = None
) -> web.Response:
    emu = emu_of(request)
    threads = [
        t
        for t in emu.state.channels.values()
        if t.parent_id == channel.id
        and t.type == thread_type
        and t.thread is not None
        and t.thread.archived
        and (joined_by is None or joined_by in t.thread_member_ids)
    ]
    before = request.query.get("before")
    if joined_by is not None:
        # Joined private archived threads: by id, descending; ``before`` is a thread id.
        threads.sort(key=lambda t: t.id, reverse=True)
        if before is not None:
            threads = [t for t in threads if t.id < int(before)]
    else:
        threads.sort(key=lambda t: t.thread.archive_timestamp if t.thread else 0.0, reverse=True)
        if before is not None:
            cutoff = dt.datetime.fromisoformat(before).timestamp()
            threads = [t for t in threads if t.thread and t.thread.archive_timestamp < cutoff]
    limit = int(request.query.get("limit", 50))
    page = threads[: max(limit, 1)]
    bot_id = acting_app(request).bot_user_id
    return json_response(
        {
            "threads": [emu.state.channel_payload(t) for t in page],
            "members": [
                _thread_member(emu.state, t, bot_id, False)
                for t in page
                if bot_id in t.thread_member_ids
            ],
            "has_more": len(threads) > len(page),
        }
    )


async def public_archived(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    if not P.has(emu.permissions(channel, bot_id), P.READ_MESSAGE_HISTORY):
        raise errors.missing_permissions()
    return _archived(request, channel, PUBLIC_THREAD)


async def private_archived(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    needed = P.READ_MESSAGE_HISTORY | P.MANAGE_THREADS
    if not P.has(emu.permissions(channel, bot_id), needed):
        raise errors.missing_permissions()
    return _archived(request, channel, PRIVATE_THREAD)


async def joined_private_archived(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    if not P.has(emu.permissions(channel, bot_id), P.READ_MESSAGE_HISTORY):
        raise errors.missing_permissions()
    return _archived(request, channel, PRIVATE_THREAD, joined_by=bot_id)


def _thread_parent(request: web.Request) -> tuple[Channel, int]:
    """The channel a thread is started in: not a DM (50003), not a thread (threads do not nest;
    Discord reports the parent's type as invalid, 50024)."""
    channel, bot_id = bot_channel(request)
    if channel.type == DM:
        raise errors.cannot_dm_channel()
    if channel.is_thread:
        raise errors.DiscordError(400, 50024, "Cannot execute action on this channel type")
    return channel, bot_id


async def start_thread_from_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _thread_parent(request)
    msg = get_message(emu, channel.id, snowflake(request, "message_id"))
    if not P.has(emu.permissions(channel, bot_id), P.CREATE_PUBLIC_THREADS):
        raise errors.missing_permissions()
    body, _ = await read_body(request)
    thread = emu.actions.create_thread(
        channel,
        bot_id,
        str(body.get("name", "")),
        # "The type of thread created matches the type of the parent channel" (Threads docs).
        thread_type=ANNOUNCEMENT_THREAD if channel.type == NEWS else PUBLIC_THREAD,
        auto_archive_duration=body.get("auto_archive_duration"),
        from_message=msg,
        rate_limit_per_user=int(body.get("rate_limit_per_user") or 0),
    )
    return json_response(emu.state.channel_payload(thread), status=201)


async def start_thread(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _thread_parent(request)
    perms = emu.permissions(channel, bot_id)
    body, files = await read_body(request)
    name = str(body.get("name", ""))
    if channel.type == FORUM:
        # A forum post is a public thread whose first message has the thread's id.
        if not P.has(perms, P.SEND_MESSAGES):
            raise errors.missing_permissions()
        message = body.get("message")
        if not isinstance(message, dict):
            raise errors.invalid_form_body(
                errors.field_error(["message"], "BASE_TYPE_REQUIRED", "This field is required")
            )
        validate_message(message, prefix=["message"], has_files=bool(files))
        thread = emu.actions.create_thread(
            channel,
            bot_id,
            name,
            auto_archive_duration=body.get("auto_archive_duration"),
            rate_limit_per_user=int(body.get("rate_limit_per_user") or 0),
        )
        first = emu.actions.create_message(thread, bot_id, message, files, message_id=thread.id)
        data = emu.state.channel_payload(thread)
        data["message"] = message_json(request, first)
        return json_response(data, status=201)
    # Without a message the default type is PRIVATE_THREAD (Start Thread without Message docs).
    thread_type = int(body.get("type") or PRIVATE_THREAD)
    needed = P.CREATE_PRIVATE_THREADS if thread_type == PRIVATE_THREAD else P.CREATE_PUBLIC_THREADS
    if not P.has(perms, needed):
        raise errors.missing_permissions()
    thread = emu.actions.create_thread(
        channel,
        bot_id,
        name,
        thread_type=thread_type,
        auto_archive_duration=body.get("auto_archive_duration"),
        invitable=bool(body.get("invitable", True)),
        rate_limit_per_user=int(body.get("rate_limit_per_user") or 0),
    )
    return json_response(emu.state.channel_payload(thread), status=201)


async def join_thread(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    emu.actions.add_thread_member(channel, bot_id)
    return no_content()


async def leave_thread(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    emu.actions.remove_thread_member(channel, bot_id)
    return no_content()


def _thread_target(request: web.Request) -> tuple[Channel, int, int]:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    user_id = snowflake(request, "user_id")
    if user_id not in emu.state.users:
        raise errors.unknown_user()
    if channel.guild_id is not None and emu.state.member(channel.guild_id, user_id) is None:
        raise errors.unknown_member()
    return channel, bot_id, user_id


async def add_thread_member(request: web.Request) -> web.Response:
    """Add Thread Member: needs the ability to send messages in the thread
    (https://discord.com/developers/docs/resources/channel#add-thread-member)."""
    emu = emu_of(request)
    channel, bot_id, user_id = _thread_target(request)
    if not P.has(emu.permissions(channel, bot_id), P.SEND_MESSAGES_IN_THREADS):
        raise errors.missing_permissions()
    emu.actions.add_thread_member(channel, user_id, by=bot_id)
    return no_content()


async def remove_thread_member(request: web.Request) -> web.Response:
    """Remove Thread Member: Manage Threads, or the creator of a private thread
    (https://discord.com/developers/docs/resources/channel#remove-thread-member)."""
    emu = emu_of(request)
    channel, bot_id, user_id = _thread_target(request)
    manage = P.has(emu.permissions(channel, bot_id), P.MANAGE_THREADS)
    own_private = channel.type == PRIVATE_THREAD and channel.owner_id == bot_id
    if not (manage or own_private):
        raise errors.missing_permissions()
    emu.actions.remove_thread_member(channel, user_id, by=bot_id)
    return no_content()


async def get_active_threads(request: web.Request) -> web.Response:
    """List Active Guild Threads: the active threads the bot can see (a private one only as
    its member or with Manage Threads), newest first, and a thread member object for each it
    joined (https://discord.com/developers/docs/resources/guild#list-active-guild-threads)."""
    emu = emu_of(request)
    guild, bot_id = bot_guild(request)
    threads = sorted(
        (
            c
            for c in emu.state.channels.values()
            if c.guild_id == guild.id
            and c.thread is not None
            and not c.thread.archived
            and _can_see_thread(emu, c, bot_id)
        ),
        key=lambda t: t.id,
        reverse=True,
    )
    return json_response(
        {
            "threads": [emu.state.channel_payload(t) for t in threads],
            "members": [
                _thread_member(emu.state, t, bot_id, False)
                for t in threads
                if bot_id in t.thread_member_ids
            ],
        }
    )


def _can_see_thread(emu: Hub, thread: Channel, user_id: int) -> bool:
    perms = emu.permissions(thread, user_id)
    if not P.has(perms, P.VIEW_CHANNEL):
        return False
    return (
        thread.type != PRIVATE_THREAD
        or user_id in thread.thread_member_ids
        or P.has(perms, P.MANAGE_THREADS)
    )


ROUTES = [
    ("POST", "/channels/{channel_id}/messages/{message_id}/threads", start_thread_from_message),
    ("POST", "/channels/{channel_id}/threads", start_thread),
    # @me before {user_id}: aiohttp matches routes in the order they are added.
    ("PUT", "/channels/{channel_id}/thread-members/@me", join_thread),
    ("DELETE", "/channels/{channel_id}/thread-members/@me", leave_thread),
    ("PUT", "/channels/{channel_id}/thread-members/{user_id}", add_thread_member),
    ("DELETE", "/channels/{channel_id}/thread-members/{user_id}", remove_thread_member),
    ("GET", "/channels/{channel_id}/thread-members", list_thread_members),
    ("GET", "/channels/{channel_id}/thread-members/{user_id}", get_thread_member),
    ("GET", "/channels/{channel_id}/threads/archived/public", public_archived),
    ("GET", "/channels/{channel_id}/threads/archived/private", private_archived),
    ("GET", "/channels/{channel_id}/users/@me/threads/archived/private", joined_private_archived),
    ("GET", "/guilds/{guild_id}/threads/active", get_active_threads),
]
