"""Pins and bulk delete (https://discord.com/developers/docs/resources/message#get-channel-pins,
#pin-message, #unpin-message, the deprecated ``/channels/{id}/pins`` forms, and
#bulk-delete-messages).

Pinning needs Pin Messages (in a guild) and works on at most 250 messages per channel (30003);
listing pins without Read Message History returns none. Bulk delete works only in guild
channels, with Manage Messages, on 2-100 distinct ids (50016), none older than two weeks
(50034); unknown ids count towards the limits and are skipped.

These routes are mounted before the message routes: ``/messages/pins`` and
``/messages/bulk-delete`` would otherwise be read as a message id.
"""

from __future__ import annotations

import datetime as dt

from aiohttp import web

from discord_emulator import errors
from discord_emulator import permissions as P
from discord_emulator.models import DM, Channel, Message

from .common import (
    bot_channel,
    emu_of,
    get_message,
    json_response,
    message_json,
    no_content,
    read_body,
    snowflake,
)

BULK_DELETE_MAX_AGE = 14 * 24 * 3600.0


def _require_pin_permission(request: web.Request, channel: Channel, bot_id: int) -> None:
    if channel.type != DM and not P.has(
        emu_of(request).permissions(channel, bot_id), P.PIN_MESSAGES
    ):
        raise errors.missing_permissions()


def _pinned(request: web.Request, channel: Channel) -> list[Message]:
    emu = emu_of(request)
    msgs = [m for m in emu.state.visible_messages(channel.id) if m.pinned_at is not None]
    return sorted(msgs, key=lambda m: m.pinned_at or 0.0, reverse=True)


async def pin(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    _require_pin_permission(request, channel, bot_id)
    msg = get_message(emu, channel.id, snowflake(request, "message_id"))
    emu.actions.pin_message(msg, bot_id)
    return no_content()


async def unpin(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    _require_pin_permission(request, channel, bot_id)
    msg = get_message(emu, channel.id, snowflake(request, "message_id"))
    emu.actions.unpin_message(msg)
    return no_content()


async def get_pins(request: web.Request) -> web.Response:
    """``{"items": [{"pinned_at", "message"}], "has_more"}``, newest pin first; ``before`` an
    ISO 8601 time, ``limit`` 1-50."""
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    limit = int(request.query.get("limit", 50))
    if not 1 <= limit <= 50:
        code, text = (
            ("NUMBER_TYPE_MAX", "int value should be less than or equal to 50.")
            if limit > 50
            else ("NUMBER_TYPE_MIN", "int value should be greater than or equal to 1.")
        )
        raise errors.invalid_form_body(errors.field_error(["limit"], code, text))
    if not P.has(emu.permissions(channel, bot_id), P.READ_MESSAGE_HISTORY):
        return json_response({"items": [], "has_more": False})
    pins = _pinned(request, channel)
    if "before" in request.query:
        before = dt.datetime.fromisoformat(request.query["before"]).timestamp()
        pins = [m for m in pins if (m.pinned_at or 0.0) < before]
    items = [
        {"pinned_at": emu.clock.iso(m.pinned_at), "message": message_json(request, m)}
        for m in pins[:limit]
    ]
    return json_response({"items": items, "has_more": len(pins) > limit})


async def get_pins_deprecated(request: web.Request) -> web.Response:
    """The deprecated list: the first 50 pinned messages as message objects."""
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    if not P.has(emu.permissions(channel, bot_id), P.READ_MESSAGE_HISTORY):
        return json_response([])
    return json_response([message_json(request, m) for m in _pinned(request, channel)[:50]])


async def bulk_delete(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    if channel.type == DM:
        raise errors.cannot_dm_channel()
    if not P.has(emu.permissions(channel, bot_id), P.MANAGE_MESSAGES):
        raise errors.missing_permissions()
    body, _ = await read_body(request)
    raw = body.get("messages")
    if not isinstance(raw, list) or not 2 <= len(raw) <= 100:
        raise errors.bulk_delete_count()
    ids = [int(m) for m in raw]
    if len(set(ids)) != len(ids):
        # "will fail with a 400 BAD REQUEST if ... any duplicate message IDs are provided"
        raise errors.invalid_form_body(
            errors.field_error(
                ["messages"], "BASE_TYPE_DUPLICATE", "Duplicate message IDs provided."
            )
        )
    now = emu.clock.time()
    found: list[Message] = []
    for mid in ids:
        msg = emu.state.messages.get(mid)
        if msg is None or msg.channel_id != channel.id or msg.deleted or msg.ephemeral:
            continue
        if now - msg.created_at > BULK_DELETE_MAX_AGE:
            raise errors.bulk_delete_too_old()
        found.append(msg)
    if found:
        emu.actions.bulk_delete(channel, found)
    return no_content()


ROUTES = [
    ("POST", "/channels/{channel_id}/messages/bulk-delete", bulk_delete),
    ("GET", "/channels/{channel_id}/messages/pins", get_pins),
    ("PUT", "/channels/{channel_id}/messages/pins/{message_id}", pin),
    ("DELETE", "/channels/{channel_id}/messages/pins/{message_id}", unpin),
    ("GET", "/channels/{channel_id}/pins", get_pins_deprecated),
    ("PUT", "/channels/{channel_id}/pins/{message_id}", pin),
    ("DELETE", "/channels/{channel_id}/pins/{message_id}", unpin),
]
