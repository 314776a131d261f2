"""Users, application, gateway discovery, application commands and guild reads."""

from __future__ import annotations

import math
import unicodedata
from typing import Any

from aiohttp import web

from discord_emulator import errors
from discord_emulator.permissions import (
    MANAGE_ROLES,
    base_permissions,
    has,
    highest_role_position,
)
from discord_emulator.state import DM, Channel

from .common import (
    acting_app,
    emu_of,
    get_channel,
    json_response,
    no_content,
    read_body,
    snowflake,
)


async def get_me(request: web.Request) -> web.Response:
    emu = emu_of(request)
    app = acting_app(request)
    user = emu.state.users[app.bot_user_id].payload()
    user.update(verified=True, mfa_enabled=False, email=None, locale="en-US")
    return json_response(user)


async def get_user(request: web.Request) -> web.Response:
    emu = emu_of(request)
    acting_app(request)
    user = emu.state.users.get(snowflake(request, "user_id"))
    if user is None:
        raise errors.unknown_user()
    return json_response(user.payload())


async def get_application(request: web.Request) -> web.Response:
    emu = emu_of(request)
    app = acting_app(request)
    owner = emu.state.users[app.owner_id].payload()
    bot = emu.state.users[app.bot_user_id].payload()
    return json_response(
        {
            "id": str(app.id),
            "name": app.name,
            "icon": None,
            "description": "",
            "rpc_origins": [],
            "bot_public": True,
            "bot_require_code_grant": False,
            "bot": bot,
            "owner": owner,
            "team": None,
            "summary": "",
            "verify_key": "0" * 64,
            "flags": app.flags,
            "tags": [],
            "redirect_uris": [],
            "interactions_endpoint_url": None,
            "approximate_guild_count": sum(
                1 for g in emu.state.guilds.values() if app.bot_user_id in g.members
            ),
            "integration_types_config": {"0": {}},
        }
    )


async def get_gateway(request: web.Request) -> web.Response:
    return json_response({"url": emu_of(request).gateway_url})


async def get_gateway_bot(request: web.Request) -> web.Response:
    # https://discord.com/developers/docs/events/gateway#get-gateway-bot: the recommended
    # shard count and the session start limit (total, remaining, reset_after ms,
    # max_concurrency).
    emu = emu_of(request)
    app = acting_app(request)
    config = emu.config
    guilds = sum(1 for g in emu.state.guilds.values() if app.bot_user_id in g.members)
    shards = max(1, math.ceil(guilds / config.guilds_per_recommended_shard))
    started = emu.gateway.sessions_started.get(app.id, 0)
    return json_response(
        {
            "url": emu.gateway_url,
            "shards": shards,
            "session_start_limit": {
                "total": config.session_start_total,
                "remaining": max(0, config.session_start_total - started),
                "reset_after": 86400000,
                "max_concurrency": config.max_concurrency,
            },
        }
    )


async def create_dm(request: web.Request) -> web.Response:
    emu = emu_of(request)
    app = acting_app(request)
    body, _ = await read_body(request)
    recipient = int(body.get("recipient_id", 0))
    if recipient not in emu.state.users:
        raise errors.unknown_user()
    channel = emu.dm_channel(app.bot_user_id, recipient)
    return json_response(emu.state.channel_payload(channel))


async def get_my_guilds(request: web.Request) -> web.Response:
    """Get Current User Guilds: partial guilds, ``before``/``after`` by id, ``limit`` 1-200
    (default 200), ``with_counts``
    (https://discord.com/developers/docs/resources/user#get-current-user-guilds)."""
    emu = emu_of(request)
    app = acting_app(request)
    limit = int(request.query.get("limit", 200))
    if not 1 <= limit <= 200:
        code, text = (
            ("NUMBER_TYPE_MAX", "int value should be less than or equal to 200.")
            if limit > 200
            else ("NUMBER_TYPE_MIN", "int value should be greater than or equal to 1.")
        )
        raise errors.invalid_form_body(errors.field_error(["limit"], code, text))
    guilds = sorted(
        (g for g in emu.state.guilds.values() if app.bot_user_id in g.members), key=lambda g: g.id
    )
    if "before" in request.query:
        guilds = [g for g in guilds if g.id < int(request.query["before"])][-limit:]
    else:
        guilds = [g for g in guilds if g.id > int(request.query.get("after", 0))][:limit]
    out = []
    for guild in guilds:
        data: dict[str, Any] = {
            "id": str(guild.id),
            "name": guild.name,
            "icon": None,
            "banner": None,
            "owner": guild.owner_id == app.bot_user_id,
            "permissions": str(base_permissions(emu.state, guild.id, app.bot_user_id)),
            "features": [],
        }
        if request.query.get("with_counts") in ("true", "1", "True"):
            data.update(approximate_member_count=len(guild.members), approximate_presence_count=0)
        out.append(data)
    return json_response(out)


# ----- application commands --------------------------------------------------------------
# https://discord.com/developers/docs/interactions/application-commands#bulk-overwrite-global-application-commands


def _check_app(request: web.Request) -> Any:
    app = acting_app(request)
    if snowflake(request, "application_id") != app.id:
        raise errors.DiscordError(403, 50001, "Missing Access")
    return app


def _normalise_command(
    emu: Any, app_id: int, raw: dict[str, Any], guild_id: int | None, existing: list[dict[str, Any]]
) -> dict[str, Any]:
    name = raw.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= 32:
        raise errors.invalid_form_body(
            errors.field_error(
                ["name"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length."
            )
        )
    ctype = int(raw.get("type", 1))
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
        "default_member_permissions": raw.get("default_member_permissions"),
        "dm_permission": raw.get("dm_permission", True),
        "contexts": raw.get("contexts"),
        "integration_types": raw.get("integration_types", [0]),
        "nsfw": raw.get("nsfw", False),
    }
    if guild_id is not None:
        cmd["guild_id"] = str(guild_id)
    return cmd


# https://discord.com/developers/docs/interactions/application-commands#application-command-object:
# CHAT_INPUT names and option names match ^[-_'\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$ and
# use lowercase where a letter has one; descriptions are 1-100 characters; at most 25 options
# (and subcommands) per level, required options before optional ones, at most 25 choices with
# names 1-100 and string values up to 100, min_length 0-6000 and max_length 1-6000. Discord
# answers 400 / 50035 with the failing field; the inner codes APPLICATION_COMMAND_INVALID_NAME
# and APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID are observed.
CHAT_INPUT, SUB_COMMAND, SUB_COMMAND_GROUP, STRING_OPTION = 1, 1, 2, 3


def _valid_name(name: Any) -> bool:
    # Python's re has no \p{L}: letters and digits are str.isalnum(); the combining marks of
    # Devanagari and Thai (category M*) are allowed too.
    return (
        isinstance(name, str)
        and 1 <= len(name) <= 32
        and name == name.lower()
        and all(
            ch in "-_'" or ch.isalnum() or unicodedata.category(ch).startswith("M") for ch in name
        )
    )


def _bad_length(path: list[str | int], low: int, high: int) -> dict[str, Any]:
    return errors.field_error(
        path, "BASE_TYPE_BAD_LENGTH", f"Must be between {low} and {high} in length."
    )


def _options_errors(options: Any, path: list[str | int]) -> dict[str, Any]:
    problems: dict[str, Any] = {}
    if not isinstance(options, list):
        return problems
    if len(options) > 25:
        errors.merge_errors(
            problems,
            errors.field_error(path, "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."),
        )
    optional_seen = False
    for j, opt in enumerate(options):
        if not isinstance(opt, dict):
            continue
        here: list[str | int] = [*path, j]
        if not _valid_name(opt.get("name")):
            errors.merge_errors(
                problems,
                errors.field_error(
                    [*here, "name"], "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
                ),
            )
        description = opt.get("description")
        if not isinstance(description, str) or not 1 <= len(description) <= 100:
            errors.merge_errors(problems, _bad_length([*here, "description"], 1, 100))
        otype = opt.get("type")
        if otype in (SUB_COMMAND, SUB_COMMAND_GROUP):
            errors.merge_errors(problems, _options_errors(opt.get("options"), [*here, "options"]))
            continue
        if opt.get("required"):
            if optional_seen:
                errors.merge_errors(
                    problems,
                    errors.field_error(
                        here,
                        "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                        "Required options must be placed before non-required options",
                    ),
                )
        else:
            optional_seen = True
        choices = opt.get("choices") or []
        if len(choices) > 25:
            errors.merge_errors(
                problems,
                errors.field_error(
                    [*here, "choices"], "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                ),
            )
        for k, choice in enumerate(choices):
            name = choice.get("name") if isinstance(choice, dict) else None
            if not isinstance(name, str) or not 1 <= len(name) <= 100:
                errors.merge_errors(problems, _bad_length([*here, "choices", k, "name"], 1, 100))
            value = choice.get("value") if isinstance(choice, dict) else None
            if isinstance(value, str) and len(value) > 100:
                errors.merge_errors(
                    problems,
                    errors.field_error(
                        [*here, "choices", k, "value"],
                        "BASE_TYPE_MAX_LENGTH",
                        "Must be 100 or fewer in length.",
                    ),
                )
        for key, low in (("min_length", 0), ("max_length", 1)):
            value = opt.get(key)
            if otype == STRING_OPTION and isinstance(value, int) and not low <= value <= 6000:
                code, text = (
                    ("NUMBER_TYPE_MAX", "int value should be less than or equal to 6000.")
                    if value > 6000
                    else ("NUMBER_TYPE_MIN", f"int value should be greater than or equal to {low}.")
                )
                errors.merge_errors(problems, errors.field_error([*here, key], code, text))
    return problems


def _command_errors(cmd: dict[str, Any], path: list[str | int]) -> dict[str, Any]:
    problems: dict[str, Any] = {}
    if int(cmd.get("type", CHAT_INPUT)) != CHAT_INPUT:
        return problems  # USER / MESSAGE commands: any 1-32 name, empty description
    if not _valid_name(cmd.get("name")):
        errors.merge_errors(
            problems,
            errors.field_error(
                [*path, "name"], "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
            ),
        )
    description = cmd.get("description")
    if not isinstance(description, str) or not 1 <= len(description) <= 100:
        errors.merge_errors(problems, _bad_length([*path, "description"], 1, 100))
    errors.merge_errors(problems, _options_errors(cmd.get("options"), [*path, "options"]))
    return problems


def _validate_commands(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, list):
        raise errors.invalid_form_body(
            errors.field_error([], "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType")
        )
    if len(body) > 100:
        raise errors.DiscordError(
            400, 30032, "Maximum number of application commands reached (100)"
        )
    seen: set[tuple[str, int]] = set()
    problems: dict[str, Any] = {}
    for i, cmd in enumerate(body):
        if isinstance(cmd, dict):
            errors.merge_errors(problems, _command_errors(cmd, [i]))
    if problems:
        raise errors.invalid_form_body(problems)
    for i, cmd in enumerate(body):
        key = (str(cmd.get("name")), int(cmd.get("type", 1)))
        if key in seen:
            raise errors.invalid_form_body(
                errors.field_error(
                    [i],
                    "APPLICATION_COMMANDS_DUPLICATE_NAME",
                    f"Application command names must be unique: {key[0]}",
                )
            )
        seen.add(key)
    return body


async def put_global_commands(request: web.Request) -> web.Response:
    emu = emu_of(request)
    app = _check_app(request)
    body, _ = await read_body(request)
    raw = _validate_commands(body.get("__list__", body))
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
        raise errors.DiscordError(403, 50001, "Missing Access")
    body, _ = await read_body(request)
    raw = _validate_commands(body.get("__list__", body))
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


# ----- guilds ------------------------------------------------------------------------------


def _bot_guild(request: web.Request) -> Any:
    emu = emu_of(request)
    app = acting_app(request)
    guild = emu.state.guilds.get(snowflake(request, "guild_id"))
    if guild is None:
        raise errors.unknown_guild()
    if app.bot_user_id not in guild.members:
        # A bot outside the guild cannot see it: Missing Access.
        raise errors.DiscordError(403, 50001, "Missing Access")
    return guild


async def get_guild(request: web.Request) -> web.Response:
    emu = emu_of(request)
    guild = _bot_guild(request)
    data = emu.state.guild_payload(guild)
    if request.query.get("with_counts") in ("true", "1"):
        data.update(approximate_member_count=len(guild.members), approximate_presence_count=0)
    return json_response(data)


async def get_member(request: web.Request) -> web.Response:
    emu = emu_of(request)
    guild = _bot_guild(request)
    member = guild.members.get(snowflake(request, "user_id"))
    if member is None:
        raise errors.unknown_member()
    return json_response(emu.state.member_payload(member))


async def list_members(request: web.Request) -> web.Response:
    emu = emu_of(request)
    guild = _bot_guild(request)
    if not acting_app(request).privileged_intents:
        # "This endpoint requires the GUILD_MEMBERS Privileged Intent"
        # (https://discord.com/developers/docs/resources/guild#list-guild-members); without it
        # enabled for the application Discord answers 50001 Missing Access (observed).
        raise errors.missing_access()
    limit = int(request.query.get("limit", 1))
    if not 1 <= limit <= 1000:
        code, text = (
            ("NUMBER_TYPE_MAX", "int value should be less than or equal to 1000.")
            if limit > 1000
            else ("NUMBER_TYPE_MIN", "int value should be greater than or equal to 1.")
        )
        raise errors.invalid_form_body(errors.field_error(["limit"], code, text))
    after = int(request.query.get("after", 0))
    members = sorted(
        (m for m in guild.members.values() if m.user_id > after), key=lambda m: m.user_id
    )
    return json_response([emu.state.member_payload(m) for m in members[:limit]])


async def _member_role_change(request: web.Request, add: bool) -> web.Response:
    """Add / Remove Guild Member Role: Manage Roles, and only a role below the bot's highest
    role (Permissions: Permission Hierarchy); 403 / 50013 otherwise, unknown role 10011,
    unknown member 10007 (https://discord.com/developers/docs/resources/guild#add-guild-member-role)."""
    emu = emu_of(request)
    guild = _bot_guild(request)
    bot_id = acting_app(request).bot_user_id
    member = guild.members.get(snowflake(request, "user_id"))
    if member is None:
        raise errors.unknown_member()
    role_id = snowflake(request, "role_id")
    role = guild.roles.get(role_id)
    if role is None or role_id == guild.id:
        raise errors.unknown_role()
    if not has(base_permissions(emu.state, guild.id, bot_id), MANAGE_ROLES):
        raise errors.missing_permissions()
    if role.position >= highest_role_position(emu.state, guild.id, bot_id):
        raise errors.missing_permissions()
    if add:
        roles = list(member.roles) if role_id in member.roles else [*member.roles, role_id]
    else:
        roles = [r for r in member.roles if r != role_id]
    emu.actions.set_member_roles(guild.id, member.user_id, roles)
    return no_content()


async def add_member_role(request: web.Request) -> web.Response:
    return await _member_role_change(request, add=True)


async def remove_member_role(request: web.Request) -> web.Response:
    return await _member_role_change(request, add=False)


async def get_roles(request: web.Request) -> web.Response:
    guild = _bot_guild(request)
    return json_response([r.payload() for r in guild.roles.values()])


async def get_guild_channels(request: web.Request) -> web.Response:
    emu = emu_of(request)
    guild = _bot_guild(request)
    channels: list[Channel] = [emu.state.channels[c] for c in guild.channel_ids]
    return json_response([emu.state.channel_payload(c) for c in channels])


async def get_active_threads(request: web.Request) -> web.Response:
    emu = emu_of(request)
    guild = _bot_guild(request)
    threads = [
        c
        for c in emu.state.channels.values()
        if c.guild_id == guild.id and c.thread is not None and not c.thread.archived
    ]
    return json_response(
        {"threads": [emu.state.channel_payload(t) for t in threads], "members": []}
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


ROUTES = [
    ("GET", "/users/@me", get_me),
    ("GET", "/users/{user_id}", get_user),
    ("POST", "/users/@me/channels", create_dm),
    ("GET", "/users/@me/guilds", get_my_guilds),
    ("GET", "/oauth2/applications/@me", get_application),
    ("GET", "/applications/@me", get_application),
    ("GET", "/gateway", get_gateway),
    ("GET", "/gateway/bot", get_gateway_bot),
    ("PUT", "/applications/{application_id}/commands", put_global_commands),
    ("GET", "/applications/{application_id}/commands", get_global_commands),
    ("PUT", "/applications/{application_id}/guilds/{guild_id}/commands", put_guild_commands),
    ("GET", "/applications/{application_id}/guilds/{guild_id}/commands", get_guild_commands),
    ("GET", "/guilds/{guild_id}", get_guild),
    ("GET", "/guilds/{guild_id}/members", list_members),
    ("GET", "/guilds/{guild_id}/members/{user_id}", get_member),
    ("PUT", "/guilds/{guild_id}/members/{user_id}/roles/{role_id}", add_member_role),
    ("DELETE", "/guilds/{guild_id}/members/{user_id}/roles/{role_id}", remove_member_role),
    ("GET", "/guilds/{guild_id}/roles", get_roles),
    ("GET", "/guilds/{guild_id}/channels", get_guild_channels),
    ("GET", "/guilds/{guild_id}/threads/active", get_active_threads),
    ("GET", "/channels/{channel_id}", get_channel_route),
]
