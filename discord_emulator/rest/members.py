"""Guild members: reading them, Modify Guild Member (nicknames, roles, timeouts) and Add /
Remove Guild Member Role.

Rules from https://discord.com/developers/docs/resources/guild#list-guild-members,
#modify-guild-member, #add-guild-member-role, and the role hierarchy of
https://discord.com/developers/docs/topics/permissions#permission-hierarchy.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from aiohttp import web

from discord_emulator import errors
from discord_emulator import permissions as P
from discord_emulator.hub import Hub
from discord_emulator.models import Guild, Member

from .common import (
    bot_guild,
    emu_of,
    json_response,
    no_content,
    query_limit,
    read_body,
    require_members_intent,
    snowflake,
)


async def get_member(request: web.Request) -> web.Response:
    emu = emu_of(request)
    guild, _ = bot_guild(request)
    member = guild.members.get(snowflake(request, "user_id"))
    if member is None:
        raise errors.unknown_member()
    return json_response(emu.state.member_payload(member))


async def list_members(request: web.Request) -> web.Response:
    emu = emu_of(request)
    guild, _ = bot_guild(request)
    require_members_intent(request)
    limit = query_limit(request, 1, 1000)
    after = int(request.query.get("after", 0))
    members = sorted(
        (m for m in guild.members.values() if m.user_id > after), key=lambda m: m.user_id
    )
    return json_response([emu.state.member_payload(m) for m in members[:limit]])


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
    emu: Hub, guild: Guild, member: Member, bot_id: int, body: dict[str, Any]
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
    guild, bot_id = bot_guild(request)
    member = guild.members.get(snowflake(request, "user_id"))
    if member is None:
        raise errors.unknown_member()
    body, _ = await read_body(request)
    _apply_member_changes(emu, guild, member, bot_id, body)
    emu.actions.member_updated(member)
    return json_response(emu.state.member_payload(member))


async def _member_role_change(request: web.Request, add: bool) -> web.Response:
    """Add / Remove Guild Member Role: Manage Roles, and only a role below the bot's highest
    role (Permissions: Permission Hierarchy); 403 / 50013 otherwise, unknown role 10011,
    unknown member 10007 (https://discord.com/developers/docs/resources/guild#add-guild-member-role)."""
    emu = emu_of(request)
    guild, bot_id = bot_guild(request)
    member = guild.members.get(snowflake(request, "user_id"))
    if member is None:
        raise errors.unknown_member()
    role_id = snowflake(request, "role_id")
    role = guild.roles.get(role_id)
    if role is None or role_id == guild.id:
        raise errors.unknown_role()
    if not P.has(P.base_permissions(emu.state, guild.id, bot_id), P.MANAGE_ROLES):
        raise errors.missing_permissions()
    if role.position >= P.highest_role_position(emu.state, guild.id, bot_id):
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


ROUTES = [
    ("GET", "/guilds/{guild_id}/members", list_members),
    ("GET", "/guilds/{guild_id}/members/{user_id}", get_member),
    ("PATCH", "/guilds/{guild_id}/members/{user_id}", modify_member),
    ("PUT", "/guilds/{guild_id}/members/{user_id}/roles/{role_id}", add_member_role),
    ("DELETE", "/guilds/{guild_id}/members/{user_id}/roles/{role_id}", remove_member_role),
]
