"""Channel, message and thread routes, with Discord's permission and thread rules.

Docs: https://discord.com/developers/docs/resources/message (create/edit/get/list/delete),
https://discord.com/developers/docs/resources/channel (modify channel, start thread),
https://discord.com/developers/docs/topics/threads (archiving, locking, forum posts).
"""

from __future__ import annotations

from aiohttp import web

from discord_emulator import errors
from discord_emulator import permissions as P
from discord_emulator.actions import AUTO_ARCHIVE_DURATIONS
from discord_emulator.state import (
    CATEGORY,
    DM,
    FORUM,
    PRIVATE_THREAD,
    PUBLIC_THREAD,
    Channel,
    State,
)
from discord_emulator.validation import IS_COMPONENTS_V2, validate_message

from .common import (
    acting_app,
    emu_of,
    get_channel,
    get_message,
    json_response,
    no_content,
    read_body,
    snowflake,
)


def _bot_channel(request: web.Request) -> tuple[Channel, int]:
    emu = emu_of(request)
    app = acting_app(request)
    channel = get_channel(emu, snowflake(request, "channel_id"))
    if channel.type == DM and app.bot_user_id not in channel.recipient_ids:
        raise errors.unknown_channel()
    emu.require_view(channel, app.bot_user_id)
    return channel, app.bot_user_id


async def create_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
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
    return json_response(emu.state.message_payload(msg))


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
    channel, bot_id = _bot_channel(request)
    if not P.has(emu.permissions(channel, bot_id), P.READ_MESSAGE_HISTORY):
        # "If operating on a guild channel, this endpoint requires the READ_MESSAGE_HISTORY
        # permission" (https://discord.com/developers/docs/resources/message#get-channel-message);
        # Discord answers 50001 Missing Access here (observed).
        raise errors.missing_access()
    msg = get_message(emu, channel.id, snowflake(request, "message_id"))
    return json_response(emu.state.message_payload(msg))


async def list_messages(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
    if not P.has(emu.permissions(channel, bot_id), P.READ_MESSAGE_HISTORY):
        # Without Read Message History Discord returns an empty list.
        return json_response([])
    limit = int(request.query.get("limit", 50))
    if not 1 <= limit <= 100:
        # Get Channel Messages: limit is 1-100.
        code, text = (
            ("NUMBER_TYPE_MAX", "int value should be less than or equal to 100.")
            if limit > 100
            else ("NUMBER_TYPE_MIN", "int value should be greater than or equal to 1.")
        )
        raise errors.invalid_form_body(errors.field_error(["limit"], code, text))
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
    return json_response([emu.state.message_payload(m) for m in reversed(msgs)])


async def edit_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
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
    _ensure_not_emptied(msg, payload, bool(files))
    if emu.clock.time() - msg.created_at > emu.config.old_message_age:
        emu.limiter.check_old_message_edit(channel.id, emu.clock.time())
    emu.actions.edit_message(msg, payload, files)
    return json_response(emu.state.message_payload(msg))


def _ensure_not_emptied(msg: object, payload: dict[str, object], has_files: bool) -> None:
    content = payload.get("content", getattr(msg, "content", ""))
    embeds = payload.get("embeds", getattr(msg, "embeds", []))
    components = payload.get("components", getattr(msg, "components", []))
    attachments = payload.get("attachments", getattr(msg, "attachments", []))
    if not (content or embeds or components or attachments or has_files):
        raise errors.empty_message()


async def delete_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
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


async def start_thread_from_message(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
    if channel.type == DM:
        raise errors.cannot_dm_channel()
    if channel.is_thread:
        # Threads cannot be nested; Discord reports the parent type as invalid.
        raise errors.DiscordError(400, 50024, "Cannot execute action on this channel type")
    msg = get_message(emu, channel.id, snowflake(request, "message_id"))
    if not P.has(emu.permissions(channel, bot_id), P.CREATE_PUBLIC_THREADS):
        raise errors.missing_permissions()
    body, _ = await read_body(request)
    thread = emu.actions.create_thread(
        channel,
        bot_id,
        str(body.get("name", "")),
        thread_type=PUBLIC_THREAD,
        auto_archive_duration=body.get("auto_archive_duration"),
        from_message=msg,
        rate_limit_per_user=int(body.get("rate_limit_per_user") or 0),
    )
    return json_response(emu.state.channel_payload(thread), status=201)


async def start_thread(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
    if channel.type == DM:
        raise errors.cannot_dm_channel()
    if channel.is_thread:
        raise errors.DiscordError(400, 50024, "Cannot execute action on this channel type")
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
        data["message"] = emu.state.message_payload(first)
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


async def modify_channel(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
    if channel.type == DM:
        raise errors.cannot_dm_channel()
    perms = emu.permissions(channel, bot_id)
    body, _ = await read_body(request)
    _check_channel_changes(body)
    meta = channel.thread
    if meta is not None:
        if meta.archived and body.get("archived") is not False:
            # Modify Channel (thread): "Requires the thread to have archived set to false or be
            # set to false in the request"
            # (https://discord.com/developers/docs/resources/channel#modify-channel-json-params-thread).
            raise errors.thread_archived()
        manage = P.has(perms, P.MANAGE_THREADS)
        # Modify Channel (thread): locking, or touching a locked thread, needs Manage Threads;
        # otherwise the thread's creator (or Manage Threads) may rename/archive it, and
        # unarchiving an unlocked thread only needs Send Messages.
        if "locked" in body and bool(body["locked"]) != meta.locked and not manage:
            raise errors.missing_permissions()
        if meta.locked and not manage:
            raise errors.missing_permissions()
        only_unarchive = set(body) <= {"archived"} and body.get("archived") is False
        if not manage and channel.owner_id != bot_id and not only_unarchive:
            raise errors.missing_permissions()
        if only_unarchive and not P.has(perms, P.SEND_MESSAGES_IN_THREADS):
            raise errors.missing_permissions()
    elif not P.has(perms, P.MANAGE_CHANNELS):
        raise errors.missing_permissions()
    emu.actions.update_channel(channel, body)
    return json_response(emu.state.channel_payload(channel))


def _check_channel_changes(body: dict[str, object]) -> None:
    """Modify Channel fields: name 1-100, auto_archive_duration one of 60/1440/4320/10080,
    rate_limit_per_user 0-21600 (https://discord.com/developers/docs/resources/channel#modify-channel);
    400 / 50035 otherwise."""
    problems: dict[str, object] = {}
    name = body.get("name")
    if "name" in body and (not isinstance(name, str) or not 1 <= len(name) <= 100):
        errors.merge_errors(
            problems,
            errors.field_error(
                ["name"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
            ),
        )
    duration = body.get("auto_archive_duration")
    if duration is not None and duration not in AUTO_ARCHIVE_DURATIONS:
        errors.merge_errors(
            problems,
            errors.field_error(
                ["auto_archive_duration"],
                "BASE_TYPE_CHOICES",
                f"Value must be one of {set(AUTO_ARCHIVE_DURATIONS)}.",
            ),
        )
    slowmode = body.get("rate_limit_per_user")
    if isinstance(slowmode, int) and not 0 <= slowmode <= 21600:
        code, text = (
            ("NUMBER_TYPE_MAX", "int value should be less than or equal to 21600.")
            if slowmode > 21600
            else ("NUMBER_TYPE_MIN", "int value should be greater than or equal to 0.")
        )
        errors.merge_errors(problems, errors.field_error(["rate_limit_per_user"], code, text))
    if problems:
        raise errors.invalid_form_body(problems)


async def join_thread(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
    emu.actions.add_thread_member(channel, bot_id)
    return no_content()


async def leave_thread(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
    emu.actions.remove_thread_member(channel, bot_id)
    return no_content()


def _thread_target(request: web.Request) -> tuple[Channel, int, int]:
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
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
    emu.actions.add_thread_member(channel, user_id)
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
    emu.actions.remove_thread_member(channel, user_id)
    return no_content()


async def delete_channel(request: web.Request) -> web.Response:
    """Delete/Close Channel: Manage Channels for a guild channel, Manage Threads for a thread;
    answers the deleted channel object
    (https://discord.com/developers/docs/resources/channel#deleteclose-channel)."""
    emu = emu_of(request)
    channel, bot_id = _bot_channel(request)
    data = emu.state.channel_payload(channel)
    if channel.type == DM:
        # Closing a DM only closes it for the bot; the channel stays.
        return json_response(data)
    needed = P.MANAGE_THREADS if channel.is_thread else P.MANAGE_CHANNELS
    if not P.has(emu.permissions(channel, bot_id), needed):
        raise errors.missing_permissions()
    emu.actions.delete_channel(channel)
    return json_response(data)


async def typing(request: web.Request) -> web.Response:
    _bot_channel(request)
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
    ("POST", "/channels/{channel_id}/messages/{message_id}/threads", start_thread_from_message),
    ("POST", "/channels/{channel_id}/threads", start_thread),
    ("PATCH", "/channels/{channel_id}", modify_channel),
    ("DELETE", "/channels/{channel_id}", delete_channel),
    ("PUT", "/channels/{channel_id}/thread-members/@me", join_thread),
    ("DELETE", "/channels/{channel_id}/thread-members/@me", leave_thread),
    ("PUT", "/channels/{channel_id}/thread-members/{user_id}", add_thread_member),
    ("DELETE", "/channels/{channel_id}/thread-members/{user_id}", remove_thread_member),
    ("POST", "/channels/{channel_id}/typing", typing),
]
