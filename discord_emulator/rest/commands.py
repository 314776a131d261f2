"""Application commands: Bulk Overwrite and Get, global and per guild
(https://discord.com/developers/docs/interactions/application-commands#bulk-overwrite-global-application-commands).

A bulk overwrite replaces every command of its scope and keeps the id of a command with the same
name and type; the definitions are checked first (:mod:`discord_emulator.command_limits`).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from discord_emulator import errors
from discord_emulator.command_limits import validate_commands
from discord_emulator.hub import Hub
from discord_emulator.models import Application

from .common import acting_app, emu_of, json_response, read_body, snowflake


def _check_app(request: web.Request) -> Application:
    app = acting_app(request)
    if snowflake(request, "application_id") != app.id:
        raise errors.missing_access()
    return app


def _normalise_command(
    emu: Hub, app_id: int, raw: dict[str, Any], guild_id: int | None, existing: list[dict[str, Any]]
) -> dict[str, Any]:
    name = raw.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= 32:
        raise errors.invalid_form_body(
            errors.field_error(
                ["name"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length."
            )
        )
    ctype = int(raw.get("type", 1))
    permissions = raw.get("default_member_permissions")
    previous = next((c for c in existing if c["name"] == name and c["type"] == ctype), None)
    cmd = {
        "id": previous["id"] if previous else str(emu.state.new_id()),
        "application_id": str(app_id),
        "version": str(emu.state.new_id()),
        "type": ctype,
        "name": name,
        "name_localizations": raw.get("name_localizations"),
        "description": raw.get("description", ""),
        "description_localizations": raw.get("description_localizations"),
        "options": raw.get("options", []),
        # A permission bit set is a string in what Discord answers, whatever was sent.
        "default_member_permissions": (None if permissions is None else str(int(permissions))),
        "dm_permission": raw.get("dm_permission", True),
        "contexts": raw.get("contexts"),
        "integration_types": raw.get("integration_types", [0]),
        "nsfw": raw.get("nsfw", False),
    }
    if guild_id is not None:
        cmd["guild_id"] = str(guild_id)
    return cmd


async def put_global_commands(request: web.Request) -> web.Response:
    emu = emu_of(request)
    app = _check_app(request)
    body, _ = await read_body(request)
    raw = validate_commands(body.get("__list__", body))
    app.global_commands = [
        _normalise_command(emu, app.id, c, None, app.global_commands) for c in raw
    ]
    emu.actions.publish("commands_sync", {"commands": app.global_commands}, scope="global")
    return json_response(app.global_commands)


async def get_global_commands(request: web.Request) -> web.Response:
    app = _check_app(request)
    return json_response(app.global_commands)


async def put_guild_commands(request: web.Request) -> web.Response:
    emu = emu_of(request)
    app = _check_app(request)
    guild_id = snowflake(request, "guild_id")
    guild = emu.state.guilds.get(guild_id)
    if guild is None or app.bot_user_id not in guild.members:
        raise errors.missing_access()
    body, _ = await read_body(request)
    raw = validate_commands(body.get("__list__", body))
    existing = app.guild_commands.get(guild_id, [])
    app.guild_commands[guild_id] = [
        _normalise_command(emu, app.id, c, guild_id, existing) for c in raw
    ]
    emu.actions.publish(
        "commands_sync",
        {"commands": app.guild_commands[guild_id]},
        scope="guild",
        guild_id=guild_id,
    )
    return json_response(app.guild_commands[guild_id])


async def get_guild_commands(request: web.Request) -> web.Response:
    app = _check_app(request)
    return json_response(app.guild_commands.get(snowflake(request, "guild_id"), []))


ROUTES = [
    ("PUT", "/applications/{application_id}/commands", put_global_commands),
    ("GET", "/applications/{application_id}/commands", get_global_commands),
    ("PUT", "/applications/{application_id}/guilds/{guild_id}/commands", put_guild_commands),
    ("GET", "/applications/{application_id}/guilds/{guild_id}/commands", get_guild_commands),
]
