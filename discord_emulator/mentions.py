"""Who a message pings: ``mentions``, ``mention_roles`` and ``mention_everyone``.

Discord parses ``<@id>``/``<@!id>`` (users), ``<@&id>`` (roles) and ``@everyone``/``@here`` from
the content on create and edit, then keeps only what ``allowed_mentions`` allows
(https://discord.com/developers/docs/resources/message#allowed-mentions-object): "This will
always validate against message content to avoid phantom pings ... and check against user/bot
permissions". Without ``allowed_mentions`` everything in the content is parsed, and a reply
pings the replied-to author. ``@everyone``/``@here`` and roles that are not mentionable need the
author's Mention Everyone permission
(https://discord.com/developers/docs/topics/permissions#permissions-bitwise-permission-flags).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import permissions as P
from .errors import field_error, invalid_form_body, merge_errors
from .models import Channel
from .state import State

USER_MENTION = re.compile(r"<@!?(\d{15,21})>")
ROLE_MENTION = re.compile(r"<@&(\d{15,21})>")
EVERYONE_MENTION = re.compile(r"@(everyone|here)\b")
PARSE_TYPES = ("roles", "users", "everyone")
MAX_IDS = 100


@dataclass
class Mentions:
    users: list[int]
    roles: list[int]
    everyone: bool


def validate_allowed_mentions(raw: Any, prefix: list[str | int] | None = None) -> None:
    """400 / 50035 for a malformed allowed_mentions (Allowed Mentions Object: parse types,
    at most 100 ids, ``parse: ["users"]`` and ``users`` are mutually exclusive)."""
    if raw is None:
        return
    path: list[str | int] = [*(prefix or []), "allowed_mentions"]
    errors: dict[str, Any] = {}
    parse = raw.get("parse") or []
    for i, kind in enumerate(parse):
        if kind not in PARSE_TYPES:
            merge_errors(
                errors,
                field_error(
                    [*path, "parse", i],
                    "BASE_TYPE_CHOICES",
                    f"Value must be one of {set(PARSE_TYPES)}.",
                ),
            )
    for key in ("users", "roles"):
        ids = raw.get(key) or []
        if len(ids) > MAX_IDS:
            merge_errors(
                errors,
                field_error(
                    [*path, key], "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_IDS} or fewer in length."
                ),
            )
        if ids and key in parse:
            merge_errors(
                errors,
                field_error(
                    path,
                    "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                    f'parse:["{key}"] and {key}: [ids...] are mutually exclusive.',
                ),
            )
    if errors:
        raise invalid_form_body(errors)


def compute(
    state: State,
    channel: Channel,
    author_id: int,
    content: str,
    allowed: dict[str, Any] | None,
    replied_author_id: int | None = None,
) -> Mentions:
    """The mentions Discord records for ``content`` sent by ``author_id`` in ``channel``."""
    parse = set(PARSE_TYPES) if allowed is None else set(allowed.get("parse") or [])
    allowed_users = set() if allowed is None else {int(u) for u in allowed.get("users") or []}
    allowed_roles = set() if allowed is None else {int(r) for r in allowed.get("roles") or []}
    can_mention_everyone = P.has(
        P.channel_permissions(state, channel, author_id), P.MENTION_EVERYONE
    )
    users: list[int] = []
    for match in USER_MENTION.finditer(content):
        uid = int(match[1])
        if uid in state.users and uid not in users and ("users" in parse or uid in allowed_users):
            users.append(uid)
    # Replies ping the replied-to author unless allowed_mentions says otherwise (replied_user
    # defaults to false once allowed_mentions is given).
    reply_ping = allowed is None or bool(allowed.get("replied_user"))
    if replied_author_id is not None and reply_ping and replied_author_id not in users:
        users.append(replied_author_id)
    roles: list[int] = []
    guild = state.guilds.get(channel.guild_id) if channel.guild_id is not None else None
    if guild is not None:
        for match in ROLE_MENTION.finditer(content):
            rid = int(match[1])
            role = guild.roles.get(rid)
            if role is None or rid in roles:
                continue
            if not ("roles" in parse or rid in allowed_roles):
                continue
            if role.mentionable or can_mention_everyone:
                roles.append(rid)
    everyone = (
        guild is not None
        and "everyone" in parse
        and can_mention_everyone
        and EVERYONE_MENTION.search(content) is not None
    )
    return Mentions(users, roles, everyone)
