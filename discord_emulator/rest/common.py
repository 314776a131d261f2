"""Request helpers shared by the REST handlers: body parsing (JSON or multipart with
``payload_json``), snowflake path parameters and ``limit`` queries, the acting application and
the channel or guild it acts in, JSON responses."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import BodyPartReader, web

from discord_emulator import errors
from discord_emulator.actions import UploadedFile
from discord_emulator.hub import Hub
from discord_emulator.intents import GUILD_MEMBERS, MESSAGE_CONTENT
from discord_emulator.message_content import redact
from discord_emulator.models import DM, Application, Channel, Guild, Message
from discord_emulator.validation import validate_upload_sizes

EMU_KEY: web.AppKey[Hub] = web.AppKey("discord_emulator")
APP_KEY: web.RequestKey[Application] = web.RequestKey("discord_emulator.application")


def emu_of(request: web.Request) -> Hub:
    return request.app[EMU_KEY]


def acting_app(request: web.Request) -> Application:
    app: Application | None = request.get(APP_KEY)
    if app is None:
        raise errors.unauthorized()
    return app


def snowflake(request: web.Request, name: str) -> int:
    raw = request.match_info[name]
    if not raw.isdigit():
        # Discord validates path snowflakes as form fields.
        raise errors.invalid_form_body(
            errors.field_error([name], "NUMBER_TYPE_COERCE", f'Value "{raw}" is not snowflake.')
        )
    return int(raw)


def query_limit(request: web.Request, default: int, high: int) -> int:
    """The ``limit`` query parameter, ``default`` when absent; outside 1..``high`` Discord
    answers 400 / 50035 NUMBER_TYPE_MIN/MAX on ``limit``."""
    limit = int(request.query.get("limit", default))
    if not 1 <= limit <= high:
        code, text = (
            ("NUMBER_TYPE_MAX", f"int value should be less than or equal to {high}.")
            if limit > high
            else ("NUMBER_TYPE_MIN", "int value should be greater than or equal to 1.")
        )
        raise errors.invalid_form_body(errors.field_error(["limit"], code, text))
    return limit


async def read_body(request: web.Request) -> tuple[dict[str, Any], list[UploadedFile]]:
    """JSON body, or multipart/form-data with ``payload_json`` and ``files[n]`` parts."""
    if request.content_type == "multipart/form-data":
        payload: dict[str, Any] = {}
        files: list[UploadedFile] = []
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                break
            if not isinstance(part, BodyPartReader):
                continue
            name = part.name or ""
            data = await part.read()
            if name == "payload_json":
                payload = json.loads(data.decode() or "{}")
            elif name.startswith("files[") or name == "file" or name.startswith("file"):
                digits = "".join(ch for ch in name if ch.isdigit())
                index = int(digits) if digits else len(files)
                files.append(
                    UploadedFile(
                        index,
                        part.filename or f"file{index}",
                        part.headers.get("Content-Type"),
                        bytes(data),
                    )
                )
        validate_upload_sizes([len(f.data) for f in files])
        return payload, files
    if not request.can_read_body:
        return {}, []
    raw = await request.read()
    if not raw:
        return {}, []
    try:
        body = json.loads(raw)
    except ValueError:
        raise errors.DiscordError(400, 50109, "The request body contains invalid JSON.") from None
    if not isinstance(body, dict):
        return {"__list__": body}, []
    return body, []


def json_response(data: Any, status: int = 200) -> web.Response:
    # Exactly "application/json" (no charset): discord.py only parses JSON when the
    # Content-Type header equals that string, as Discord sends it.
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"}
    )


def no_content() -> web.Response:
    return web.Response(status=204)


def message_json(request: web.Request, msg: Message) -> dict[str, Any]:
    """A message as the acting app reads it over REST: without the message content intent
    enabled for the app, others' messages come with empty content
    (:mod:`discord_emulator.message_content`)."""
    emu = emu_of(request)
    app = acting_app(request)
    channel = emu.state.channels.get(msg.channel_id)
    return redact(
        emu.state.message_payload(msg),
        app.bot_user_id,
        has_intent=bool(app.privileged_intents & MESSAGE_CONTENT),
        in_dm=channel is not None and channel.type == DM,
    )


def get_channel(emu: Hub, channel_id: int) -> Channel:
    channel = emu.state.channels.get(channel_id)
    if channel is None:
        raise errors.unknown_channel()
    return channel


def get_message(emu: Hub, channel_id: int, message_id: int) -> Message:
    """A message visible through channel endpoints: ephemeral ones are not (10008)."""
    msg = emu.state.messages.get(message_id)
    if msg is None or msg.channel_id != channel_id or msg.deleted or msg.ephemeral:
        raise errors.unknown_message()
    return msg


def bot_channel(request: web.Request) -> tuple[Channel, int]:
    """The path's channel as the acting bot sees it, and the bot's user id: an unknown channel
    or another's DM is 10003, a channel it cannot view 50001."""
    emu = emu_of(request)
    app = acting_app(request)
    channel = get_channel(emu, snowflake(request, "channel_id"))
    if channel.type == DM and app.bot_user_id not in channel.recipient_ids:
        raise errors.unknown_channel()
    emu.require_view(channel, app.bot_user_id)
    return channel, app.bot_user_id


def bot_guild(request: web.Request) -> tuple[Guild, int]:
    """The path's guild and the acting bot's user id: an unknown guild is 10004; a guild the
    bot is not in, 50001 Missing Access (it cannot see it)."""
    emu = emu_of(request)
    bot_id = acting_app(request).bot_user_id
    guild = emu.state.guilds.get(snowflake(request, "guild_id"))
    if guild is None:
        raise errors.unknown_guild()
    if bot_id not in guild.members:
        raise errors.missing_access()
    return guild, bot_id


def require_members_intent(request: web.Request) -> None:
    """Listing guild or thread members "requires the GUILD_MEMBERS Privileged Intent" enabled
    for the application (https://discord.com/developers/docs/resources/guild#list-guild-members;
    channel#list-thread-members); without it Discord answers 50001 Missing Access (observed)."""
    if not acting_app(request).privileged_intents & GUILD_MEMBERS:
        raise errors.missing_access()
