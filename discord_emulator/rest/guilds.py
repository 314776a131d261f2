"""Guilds: Get Guild, its roles and channels, and Create Guild Channel.

Rules from https://discord.com/developers/docs/resources/guild#get-guild and
#create-guild-channel. A bot outside a guild cannot see it (403 / 50001).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from discord_emulator import errors
from discord_emulator import permissions as P
from discord_emulator.models import CATEGORY, FORUM, TEXT, VOICE, Channel, Overwrite

from .common import bot_guild, emu_of, json_response, read_body

# The channel types Create Guild Channel makes here; announcement, stage and media channels
# need guild features the emulator does not model.
CREATABLE_TYPES = (TEXT, VOICE, CATEGORY, FORUM)


async def get_guild(request: web.Request) -> web.Response:
    emu = emu_of(request)
    guild, _ = bot_guild(request)
    data = emu.state.guild_payload(guild)
    if request.query.get("with_counts") in ("true", "1"):
        data.update(approximate_member_count=len(guild.members), approximate_presence_count=0)
    return json_response(data)


async def get_roles(request: web.Request) -> web.Response:
    guild, _ = bot_guild(request)
    return json_response([r.payload() for r in guild.roles.values()])


async def get_guild_channels(request: web.Request) -> web.Response:
    emu = emu_of(request)
    guild, _ = bot_guild(request)
    channels: list[Channel] = [emu.state.channels[c] for c in guild.channel_ids]
    return json_response([emu.state.channel_payload(c) for c in channels])


def _channel_errors(body: dict[str, Any]) -> dict[str, Any]:
    """name 1-100 (required), type one of the creatable ones, topic 0-1024,
    rate_limit_per_user 0-21600; 400 / 50035 with each failing field."""
    problems: dict[str, Any] = {}
    name = body.get("name")
    if name is None:
        errors.merge_errors(
            problems, errors.field_error(["name"], "BASE_TYPE_REQUIRED", "This field is required")
        )
    elif not isinstance(name, str) or not 1 <= len(name) <= 100:
        errors.merge_errors(
            problems,
            errors.field_error(
                ["name"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
            ),
        )
    ctype = body.get("type")
    if ctype is not None and ctype not in CREATABLE_TYPES:
        errors.merge_errors(
            problems,
            errors.field_error(
                ["type"], "BASE_TYPE_CHOICES", f"Value must be one of {set(CREATABLE_TYPES)}."
            ),
        )
    topic = body.get("topic")
    if isinstance(topic, str) and len(topic) > 1024:
        errors.merge_errors(
            problems,
            errors.field_error(
                ["topic"], "BASE_TYPE_MAX_LENGTH", "Must be 1024 or fewer in length."
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
    return problems


def _overwrites(raw: Any, bot_perms: int) -> list[Overwrite]:
    """The new channel's overwrites. "Only permissions your bot has in the guild can be
    allowed/denied", and Manage Roles only by an administrator; else 403 / 50013."""
    out: list[Overwrite] = []
    for item in raw or []:
        # "allow and deny can be omitted or set to null, which both default to "0"".
        allow, deny = int(item.get("allow") or 0), int(item.get("deny") or 0)
        if (allow | deny) & ~bot_perms:
            raise errors.missing_permissions()
        if (allow | deny) & P.MANAGE_ROLES and not bot_perms & P.ADMINISTRATOR:
            raise errors.missing_permissions()
        out.append(Overwrite(int(item["id"]), int(item.get("type") or 0), allow, deny))
    return out


async def create_channel(request: web.Request) -> web.Response:
    emu = emu_of(request)
    guild, bot_id = bot_guild(request)
    perms = P.base_permissions(emu.state, guild.id, bot_id)
    if not P.has(perms, P.MANAGE_CHANNELS):
        raise errors.missing_permissions()
    body, _ = await read_body(request)
    problems = _channel_errors(body)
    if problems:
        raise errors.invalid_form_body(problems)
    parent = body.get("parent_id")
    channel = Channel(
        id=emu.state.new_id(),
        type=int(body.get("type") or TEXT),
        guild_id=guild.id,
        name=str(body["name"]),
        parent_id=int(parent) if parent else None,
        position=int(body.get("position") or len(guild.channel_ids)),
        topic=body.get("topic"),
        overwrites=_overwrites(body.get("permission_overwrites"), perms),
        rate_limit_per_user=int(body.get("rate_limit_per_user") or 0),
        nsfw=bool(body.get("nsfw")),
    )
    emu.actions.add_channel(guild, channel)
    # Discord answers 201 Created here (observed).
    return json_response(emu.state.channel_payload(channel), status=201)


ROUTES = [
    ("GET", "/guilds/{guild_id}", get_guild),
    ("GET", "/guilds/{guild_id}/roles", get_roles),
    ("GET", "/guilds/{guild_id}/channels", get_guild_channels),
    ("POST", "/guilds/{guild_id}/channels", create_channel),
]
