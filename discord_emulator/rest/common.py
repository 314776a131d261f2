"""Request helpers shared by the REST handlers: body parsing (JSON or multipart with
``payload_json``), snowflake path parameters, the acting application, JSON responses."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import BodyPartReader, web

from discord_emulator import errors
from discord_emulator.actions import UploadedFile
from discord_emulator.hub import Hub
from discord_emulator.state import Application, Channel, Message
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
