"""Reaction routes (https://discord.com/developers/docs/resources/message#create-reaction and the
sections after it).

Create Reaction needs Read Message History, and Add Reactions when nobody has reacted with that
emoji yet; removing another user's reaction or clearing reactions needs Manage Messages; none of
it works in an archived thread (50083). The emoji in the path is URL-encoded Unicode or
``name:id``; anything else is 10014 Unknown Emoji. The emulator has no custom emojis, so every
``name:id`` is unknown, and a Unicode emoji is recognised only roughly (it must contain a
character outside ASCII), not against Discord's emoji list.
"""

from __future__ import annotations

from aiohttp import web

from discord_emulator import errors
from discord_emulator import permissions as P
from discord_emulator.models import DM, Channel, Message

from .common import bot_channel, emu_of, get_message, json_response, no_content, snowflake


def _emoji_key(request: web.Request) -> str:
    raw = request.match_info["emoji"]
    if not raw or raw.isascii():
        # Plain text (":thumbsup:", "thumbsup") or a custom emoji "name:id" the bot cannot
        # use: there are no custom emojis in the emulator.
        raise errors.unknown_emoji()
    return raw


def _target(request: web.Request) -> tuple[Channel, int, Message]:
    emu = emu_of(request)
    channel, bot_id = bot_channel(request)
    msg = get_message(emu, channel.id, snowflake(request, "message_id"))
    return channel, bot_id, msg


def _require_manage_messages(request: web.Request, channel: Channel, bot_id: int) -> None:
    if channel.type == DM:
        # Nobody moderates a DM: other users' reactions cannot be removed there.
        raise errors.cannot_dm_channel()
    if not P.has(emu_of(request).permissions(channel, bot_id), P.MANAGE_MESSAGES):
        raise errors.missing_permissions()


async def create_reaction(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id, msg = _target(request)
    key = _emoji_key(request)
    perms = emu.permissions(channel, bot_id)
    if not P.has(perms, P.READ_MESSAGE_HISTORY):
        raise errors.missing_permissions()
    if key not in msg.reactions and not P.has(perms, P.ADD_REACTIONS):
        # Add Reactions is only needed to be the first to react with an emoji.
        raise errors.missing_permissions()
    emu.actions.add_reaction(msg, bot_id, key)
    return no_content()


async def delete_own_reaction(request: web.Request) -> web.Response:
    emu = emu_of(request)
    _, bot_id, msg = _target(request)
    emu.actions.remove_reaction(msg, bot_id, _emoji_key(request))
    return no_content()


async def delete_user_reaction(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id, msg = _target(request)
    key = _emoji_key(request)
    user_id = snowflake(request, "user_id")
    if user_id != bot_id:
        _require_manage_messages(request, channel, bot_id)
    emu.actions.remove_reaction(msg, user_id, key)
    return no_content()


async def get_reactions(request: web.Request) -> web.Response:
    """Users who reacted with the emoji: ``limit`` 1-100 (default 25), ``after`` a user id;
    ``type=1`` (super reactions) is always empty here."""
    emu = emu_of(request)
    _, _, msg = _target(request)
    key = _emoji_key(request)
    limit = int(request.query.get("limit", 25))
    if not 1 <= limit <= 100:
        code, text = (
            ("NUMBER_TYPE_MAX", "int value should be less than or equal to 100.")
            if limit > 100
            else ("NUMBER_TYPE_MIN", "int value should be greater than or equal to 1.")
        )
        raise errors.invalid_form_body(errors.field_error(["limit"], code, text))
    if request.query.get("type", "0") != "0":
        return json_response([])
    after = int(request.query.get("after", 0))
    users = sorted(u for u in msg.reactions.get(key, []) if u > after)[:limit]
    return json_response([emu.state.users[u].payload() for u in users])


async def delete_all_reactions(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id, msg = _target(request)
    _require_manage_messages(request, channel, bot_id)
    emu.actions.clear_reactions(msg)
    return no_content()


async def delete_emoji_reactions(request: web.Request) -> web.Response:
    emu = emu_of(request)
    channel, bot_id, msg = _target(request)
    key = _emoji_key(request)
    _require_manage_messages(request, channel, bot_id)
    emu.actions.clear_reactions(msg, key)
    return no_content()


_BASE = "/channels/{channel_id}/messages/{message_id}/reactions"

# "@me" is registered before "{user_id}": aiohttp tries routes in the order they were added.
ROUTES = [
    ("PUT", _BASE + "/{emoji}/@me", create_reaction),
    ("DELETE", _BASE + "/{emoji}/@me", delete_own_reaction),
    ("DELETE", _BASE + "/{emoji}/{user_id}", delete_user_reaction),
    ("GET", _BASE + "/{emoji}", get_reactions),
    ("DELETE", _BASE + "/{emoji}", delete_emoji_reactions),
    ("DELETE", _BASE, delete_all_reactions),
]
