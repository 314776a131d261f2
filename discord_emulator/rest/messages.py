"""Messages: Create, Get, List, Edit and Delete Message, and the stored attachments' files.

Docs: https://discord.com/developers/docs/resources/message (create/edit/get/list/delete), with
the thread rules of https://discord.com/developers/docs/topics/threads (archived and locked
threads) and the permissions each route needs.
"""

from __future__ import annotations

from aiohttp import web

from discord_emulator import errors
from discord_emulator import permissions as P
from discord_emulator.component_limits import IS_COMPONENTS_V2
from discord_emulator.models import CATEGORY, DM, FORUM, Channel
from discord_emulator.state import State
from discord_emulator.validation import validate_message

from .common import (
    bot_channel,
    emu_of,
    get_message,
    json_response,
    message_json,
    no_content,
    query_limit,
    read_body,
    snowflake,
)


async def create_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    # Voice channels have a text chat ("Text in Voice"); forums take posts through the thread
    # route and categories hold no messages.
    if channel.type in (FORUM, CATEGORY):
        raise errors.cannot_send_in_voice()
    perms = emu.permissions(channel, bot_id)
    # Threads need Send Messages in Threads instead of Send Messages (Permissions docs).
    needed = P.SEND_MESSAGES_IN_THREADS if channel.is_thread else P.SEND_MESSAGES
    if not P.has(perms, needed):
        raise errors.missing_permissions()
    if channel.type == DM:
        _ensure_can_dm(emu.state, channel, bot_id)
    payload, files = await read_body(request)
    if payload.get("message_reference") and not P.has(perms, P.READ_MESSAGE_HISTORY):
        # A reply needs Read Message History
        # (https://discord.com/developers/docs/resources/message#create-message).
        raise errors.missing_permissions()
    validate_message(payload, has_files=bool(files))
    emu.actions.ensure_writable_thread(channel, can_manage=P.has(perms, P.MANAGE_THREADS))
    msg = emu.actions.create_message(channel, bot_id, payload, files)
    return json_response(message_json(request, msg))


def _ensure_can_dm(state: State, channel: Channel, bot_id: int) -> None:
    """50007 Cannot send messages to this user (JSON Error Codes): the recipient is a bot,
    shares no server with the bot, or does not accept DMs from server members (observed;
    https://discord.com/developers/docs/topics/opcodes-and-status-codes#json-json-error-codes)."""
    other = next((u for u in channel.recipient_ids if u != bot_id), None)
    user = state.users.get(other) if other is not None else None
    shares_guild = any(other in g.members and bot_id in g.members for g in state.guilds.values())
    if user is None or user.bot or not user.accepts_dms or not shares_guild:
        raise errors.cannot_message_user()


async def get_message_route(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    if not P.has(emu.permissions(channel, bot_id), P.READ_MESSAGE_HISTORY):
        # "If operating on a guild channel, this endpoint requires the READ_MESSAGE_HISTORY
        # permission" (https://discord.com/developers/docs/resources/message#get-channel-message);
        # Discord answers 50001 Missing Access here (observed).
        raise errors.missing_access()
    msg = get_message(emu, channel.id, snowflake(request, "message_id"))
    return json_response(message_json(request, msg))


async def list_messages(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    if not P.has(emu.permissions(channel, bot_id), P.READ_MESSAGE_HISTORY):
        # Without Read Message History Discord returns an empty list.
        return json_response([])
    limit = query_limit(request, 50, 100)  # Get Channel Messages: limit is 1-100.
    msgs = emu.state.visible_messages(channel.id)
    if "before" in request.query:
        before = int(request.query["before"])
        msgs = [m for m in msgs if m.id < before][-limit:]
    elif "after" in request.query:
        after = int(request.query["after"])
        msgs = [m for m in msgs if m.id > after][:limit]
    elif "around" in request.query:
        around = int(request.query["around"])
        older = [m for m in msgs if m.id <= around][-(limit // 2 + limit % 2) :]
        newer = [m for m in msgs if m.id > around][: limit // 2]
        msgs = older + newer
    else:
        msgs = msgs[-limit:]
    return json_response([message_json(request, m) for m in reversed(msgs)])


async def edit_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    msg = get_message(emu, channel.id, snowflake(request, "message_id"))
    payload, files = await read_body(request)
    if msg.author_id != bot_id:
        # "Other users can only edit flags and only if they have the MANAGE_MESSAGES
        # permission" (https://discord.com/developers/docs/resources/message#edit-message).
        # discord.py also sends ``tts`` and the client's allowed_mentions, which change nothing.
        if files or set(payload) - {"flags", "allowed_mentions", "tts"}:
            raise errors.cannot_edit_other_users_message()
        if not P.has(emu.permissions(channel, bot_id), P.MANAGE_MESSAGES):
            raise errors.missing_permissions()
    if channel.thread is not None and channel.thread.archived:
        # Editing never unarchives a thread (Threads docs); Discord answers 50083.
        raise errors.thread_archived()
    validate_message(
        payload, require_content=False, components_v2=bool(msg.flags & IS_COMPONENTS_V2)
    )
    ensure_not_emptied(msg, payload, bool(files))
    if emu.clock.time() - msg.created_at > emu.config.old_message_age:
        emu.limiter.check_old_message_edit(channel.id, emu.clock.time())
    emu.actions.edit_message(msg, payload, files)
    return json_response(message_json(request, msg))


def ensure_not_emptied(msg: object, payload: dict[str, object], has_files: bool) -> None:
    content = payload.get("content", getattr(msg, "content", ""))
    embeds = payload.get("embeds", getattr(msg, "embeds", []))
    components = payload.get("components", getattr(msg, "components", []))
    attachments = payload.get("attachments", getattr(msg, "attachments", []))
    if not (content or embeds or components or attachments or has_files):
        raise errors.empty_message()


async def delete_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    msg = get_message(emu, channel.id, snowflake(request, "message_id"))
    if msg.author_id != bot_id and channel.type == DM:
        # Manage Messages exists only "on a guild channel" (Delete Message); in a DM another
        # user's message cannot be deleted: 50003 (observed).
        raise errors.cannot_dm_channel()
    if msg.author_id != bot_id and not P.has(emu.permissions(channel, bot_id), P.MANAGE_MESSAGES):
        raise errors.missing_permissions()
    # Deleting is allowed in an archived thread (only sending and editing are refused):
    # https://discord.com/developers/docs/topics/threads#archiving-and-unarchiving-threads
    emu.actions.delete_message(msg)
    return no_content()


async def get_attachment(request: web.Request) -> web.Response:
    emu = emu_of(request)
    data = emu.state.attachment_bytes.get(int(request.match_info["attachment_id"]))
    if data is None:
        raise web.HTTPNotFound()
    return web.Response(body=data)


ROUTES = [
    ("POST", "/channels/{channel_id}/messages", create_message),
    ("GET", "/channels/{channel_id}/messages", list_messages),
    ("GET", "/channels/{channel_id}/messages/{message_id}", get_message_route),
    ("PATCH", "/channels/{channel_id}/messages/{message_id}", edit_message),
    ("DELETE", "/channels/{channel_id}/messages/{message_id}", delete_message),
]
