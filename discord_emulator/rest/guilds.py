"""Guild writes a bot makes: Create Guild Channel, Modify Guild Member.

Rules from https://discord.com/developers/docs/resources/guild#create-guild-channel and
#modify-guild-member, and the role hierarchy of
https://discord.com/developers/docs/topics/permissions#permission-hierarchy.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from aiohttp import web

from discord_emulator import errors
from discord_emulator import permissions as P
from discord_emulator.state import (
    CATEGORY,
    FORUM,
    TEXT,
    VOICE,
    Channel,
    Guild,
    Member,
    Overwrite,
)

from .common import acting_app, emu_of, json_response, read_body, snowflake

# The channel types Create Guild Channel makes here; announcement, stage and media channels
# need guild features the emulator does not model.
CREATABLE_TYPES = (TEXT, VOICE, CATEGORY, FORUM)


def _bot_guild(request: web.Request) -> tuple[Guild, int]:
    emu = emu_of(request)
    bot_id = acting_app(request).bot_user_id
    guild = emu.state.guilds.get(snowflake(request, "guild_id"))
    if guild is None:
        raise errors.unknown_guild()
    if bot_id not in guild.members:
        raise errors.missing_access()
    return guild, bot_id


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
    guild, bot_id = _bot_guild(request)
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


# A timeout ends "up to 28 days in the future" (Modify Guild Member).
MAX_TIMEOUT = 28 * 86400


def _timeout_until(raw: Any, now: float) -> float | None:
    """The end of a timeout from an ISO 8601 timestamp (None lifts it); past 28 days, or not a
    timestamp, 400 / 50035 INVALID_COMMUNICATION_DISABLED_TIMESTAMP (observed code)."""
    if raw is None:
        return None
    try:
        until = dt.datetime.fromisoformat(str(raw)).timestamp()
    except ValueError:
        until = None
    if until is None or until > now + MAX_TIMEOUT:
        raise errors.invalid_form_body(
            errors.field_error(
                ["communication_disabled_until"],
                "INVALID_COMMUNICATION_DISABLED_TIMESTAMP",
                "Invalid communication disabled timestamp",
            )
        )
    return until


def _apply_member_changes(
    emu: Any, guild: Guild, member: Member, bot_id: int, body: dict[str, Any]
) -> None:
    """Check every requested change against the bot's permissions and rank, then apply them;
    nothing changes when one is refused."""
    state = emu.state
    perms = P.base_permissions(state, guild.id, bot_id)
    bot_rank = P.highest_role_position(state, guild.id, bot_id)
    # Nicknames and timeouts only for members whose highest role is below the bot's (the
    # hierarchy docs name nicknames; for timeouts it is observed). The owner outranks all.
    outranked = P.highest_role_position(state, guild.id, member.user_id) < bot_rank
    if "nick" in body:
        nick = body["nick"]
        if nick and len(str(nick)) > 32:
            raise errors.invalid_form_body(
                errors.field_error(
                    ["nick"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length."
                )
            )
        if not P.has(perms, P.MANAGE_NICKNAMES) or not outranked:
            raise errors.missing_permissions()
    roles: list[int] | None = None
    if body.get("roles") is not None:
        roles = [int(r) for r in body["roles"]]
        if not P.has(perms, P.MANAGE_ROLES):
            raise errors.missing_permissions()
        for role_id in set(roles) ^ set(member.roles):
            role = guild.roles.get(role_id)
            if role is None or role_id == guild.id:
                raise errors.unknown_role()
            # "A bot can grant roles to other users that are of a lower position than its own
            # highest role"; taking one away is held to the same rank.
            if role.position >= bot_rank:
                raise errors.missing_permissions()
    timeout = "communication_disabled_until" in body
    until = member.communication_disabled_until
    if timeout:
        until = _timeout_until(body["communication_disabled_until"], emu.clock.time())
        target = P.base_permissions(state, guild.id, member.user_id)
        # "Will throw a 403 error if the user has the ADMINISTRATOR permission or is the owner".
        if not P.has(perms, P.MODERATE_MEMBERS) or target == P.ALL or not outranked:
            raise errors.missing_permissions()
    if body.get("channel_id") is not None or any(
        body.get(key) is not None for key in ("mute", "deaf")
    ):
        # Nobody is in a voice channel here.
        raise errors.DiscordError(400, 40032, "Target user is not connected to voice")
    if "nick" in body:
        member.nick = str(body["nick"]) if body["nick"] else None
    if roles is not None:
        member.roles = list(dict.fromkeys(roles))
    member.communication_disabled_until = until


async def modify_member(request: web.Request) -> web.Response:
    """Modify Guild Member: nick (Manage Nicknames), roles (Manage Roles),
    communication_disabled_until (Moderate Members); 200 with the member and
    GUILD_MEMBER_UPDATE."""
    emu = emu_of(request)
    guild, bot_id = _bot_guild(request)
    member = guild.members.get(snowflake(request, "user_id"))
    if member is None:
        raise errors.unknown_member()
    body, _ = await read_body(request)
    _apply_member_changes(emu, guild, member, bot_id, body)
    emu.actions.member_updated(member)
    return json_response(emu.state.member_payload(member))


ROUTES = [
    ("POST", "/guilds/{guild_id}/channels", create_channel),
    ("PATCH", "/guilds/{guild_id}/members/{user_id}", modify_member),
]
