"""Reading thread members and archived threads
(https://discord.com/developers/docs/resources/channel#get-thread-member, #list-thread-members,
#list-public-archived-threads, #list-private-archived-threads,
#list-joined-private-archived-threads).

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
from discord_emulator.state import PRIVATE_THREAD, PUBLIC_THREAD, Channel, State

from .channels import _bot_channel
from .common import acting_app, emu_of, json_response, snowflake


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
    channel, bot_id = _bot_channel(request)
    if not channel.is_thread:
        # Thread endpoints on a channel that is not a thread (observed).
        raise errors.DiscordError(400, 50024, "Cannot execute action on this channel type")
    return channel, bot_id


def _limit(request: web.Request, default: int, high: int) -> int:
    limit = int(request.query.get("limit", default))
    if not 1 <= limit <= high:
        code, text = (
            ("NUMBER_TYPE_MAX", f"int value should be less than or equal to {high}.")
            if limit > high
            else ("NUMBER_TYPE_MIN", "int value should be greater than or equal to 1.")
        )
        raise errors.invalid_form_body(errors.field_error(["limit"], code, text))
    return limit


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
    if not acting_app(request).privileged_intents:
        raise errors.missing_access()
    limit = _limit(request, 100, 100)
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
    channel, bot_id = _bot_channel(request)
    if not P.has(emu.permissions(channel, bot_id), P.READ_MESSAGE_HISTORY):
        raise errors.missing_permissions()
    return _archived(request, channel, PUBLIC_THREAD)


async def private_archived(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
    needed = P.READ_MESSAGE_HISTORY | P.MANAGE_THREADS
    if not P.has(emu.permissions(channel, bot_id), needed):
        raise errors.missing_permissions()
    return _archived(request, channel, PRIVATE_THREAD)


async def joined_private_archived(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
    if not P.has(emu.permissions(channel, bot_id), P.READ_MESSAGE_HISTORY):
        raise errors.missing_permissions()
    return _archived(request, channel, PRIVATE_THREAD, joined_by=bot_id)


ROUTES = [
    ("GET", "/channels/{channel_id}/thread-members", list_thread_members),
    ("GET", "/channels/{channel_id}/thread-members/{user_id}", get_thread_member),
    ("GET", "/channels/{channel_id}/threads/archived/public", public_archived),
    ("GET", "/channels/{channel_id}/threads/archived/private", private_archived),
    ("GET", "/channels/{channel_id}/users/@me/threads/archived/private", joined_private_archived),
]
