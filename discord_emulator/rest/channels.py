"""Channels: Get Channel, Modify Channel (a channel or a thread), Delete/Close Channel and
Trigger Typing Indicator.

Docs: https://discord.com/developers/docs/resources/channel#get-channel, #modify-channel,
#deleteclose-channel, and who may edit a thread
(https://discord.com/developers/docs/topics/threads#editing-deleting-threads).
"""

from __future__ import annotations

from aiohttp import web

from discord_emulator import errors
from discord_emulator import permissions as P
from discord_emulator.actions import AUTO_ARCHIVE_DURATIONS
from discord_emulator.models import DM

from .common import (
    acting_app,
    bot_channel,
    emu_of,
    get_channel,
    json_response,
    no_content,
    read_body,
    snowflake,
)


async def get_channel_route(request: web.Request) -> web.Response:
    emu = emu_of(request)
    app = acting_app(request)
    channel = get_channel(emu, snowflake(request, "channel_id"))
    emu.require_view(channel, app.bot_user_id)
    if channel.type == DM and app.bot_user_id not in channel.recipient_ids:
        raise errors.unknown_channel()
    data = emu.state.channel_payload(channel)
    if channel.is_thread and app.bot_user_id in channel.thread_member_ids:
        # "getting a channel will return the thread member object for the current user as a
        # property on the channel" (https://discord.com/developers/docs/topics/threads).
        data["member"] = emu.state.thread_member_payload(channel, app.bot_user_id)
    return json_response(data)


async def modify_channel(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
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
        # Who may edit a thread (https://discord.com/developers/docs/topics/threads#editing-deleting-threads):
        # changing locked or rate_limit_per_user, or touching a locked thread, needs Manage
        # Threads; the name, archived and auto_archive_duration the thread's creator may change
        # too; and setting archived to false "only requires the current user has already been
        # added to the thread".
        slowmode = body.get("rate_limit_per_user")
        if not manage and (
            ("locked" in body and bool(body["locked"]) != meta.locked)
            or ("rate_limit_per_user" in body and int(slowmode or 0) != channel.rate_limit_per_user)
            or meta.locked
        ):
            raise errors.missing_permissions()
        only_unarchive = set(body) <= {"archived"} and body.get("archived") is False
        if not manage and channel.owner_id != bot_id and not only_unarchive:
            raise errors.missing_permissions()
        if only_unarchive and not manage and bot_id not in channel.thread_member_ids:
            raise errors.missing_permissions()
    elif not P.has(perms, P.MANAGE_CHANNELS):
        raise errors.missing_permissions()
    emu.actions.update_channel(channel, body, by=bot_id)
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


async def delete_channel(request: web.Request) -> web.Response:
    """Delete/Close Channel: Manage Channels for a guild channel, Manage Threads for a thread;
    answers the deleted channel object
    (https://discord.com/developers/docs/resources/channel#deleteclose-channel)."""
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
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
    bot_channel(request)
    return no_content()


ROUTES = [
    ("GET", "/channels/{channel_id}", get_channel_route),
    ("PATCH", "/channels/{channel_id}", modify_channel),
    ("DELETE", "/channels/{channel_id}", delete_channel),
    ("POST", "/channels/{channel_id}/typing", typing),
]
