"""Who the bot is and where it connects: the current user and other users, the application,
gateway discovery, the bot's guilds and opening a DM
(https://discord.com/developers/docs/resources/user, resources/application,
events/gateway#get-gateway-bot)."""

from __future__ import annotations

import math
from typing import Any

from aiohttp import web

from discord_emulator import errors
from discord_emulator.permissions import base_permissions

from .common import acting_app, emu_of, json_response, query_limit, read_body, snowflake


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
    limit = query_limit(request, 200, 200)
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


ROUTES = [
    ("GET", "/users/@me", get_me),
    ("GET", "/users/{user_id}", get_user),
    ("POST", "/users/@me/channels", create_dm),
    ("GET", "/users/@me/guilds", get_my_guilds),
    ("GET", "/oauth2/applications/@me", get_application),
    ("GET", "/applications/@me", get_application),
    ("GET", "/gateway", get_gateway),
    ("GET", "/gateway/bot", get_gateway_bot),
]
