"""The chat page's HTTP side: ``/`` serves the page, ``/_emulator/page/...`` serves it data.

The page reads a user's view of the world (channels, threads, DMs; messages with ephemeral ones
only for the user they were sent to), sends what the composer holds (a slash command parsed by
:mod:`.commandline`, or a plain message) and completes command lines. Clicks and the live event
stream use the control API (``/_emulator/clicks``, ``/_emulator/events``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from aiohttp import web

from discord_emulator.control import CONTROL_KEY, Control
from discord_emulator.control_http import json_body
from discord_emulator.interaction_builder import InteractionBuilder
from discord_emulator.models import DM, FLAG_LOADING, FORUM, SENT_TYPES, TEXT, Channel, Message

from .commandline import (
    CommandLineError,
    Focus,
    Suggestion,
    focus,
    leaf_options,
    parse,
    parse_fields,
    suggest,
)

STATIC_FILES = {
    "text.js": "text/javascript",
    "messages.js": "text/javascript",
    "composer.js": "text/javascript",
    "page.js": "text/javascript",
    "page.css": "text/css",
    "favicon.svg": "image/svg+xml",
}

JobLookup = Callable[[str, int], Awaitable[dict[str, Any] | None]]
"""``(job id, user id) -> {"id", "kind", "task", "events": [{"at", "from", "to", "actor",
"by", "reason", "ignored"}]}``, or None when the user may not see it. It is the application's
own record, shown as given: the page interprets none of its values (a job's state it learns, as
a person would, from what the bot posts)."""


@dataclass
class PageConfig:
    """What the page shows besides the emulated world.

    Attributes:
        viewers: user ids that can be acted as (the first is the default).
        title: the page's and the guild header's title.
        jobs: reads a job's timeline for the page (``None``: job ids are plain text).
        job_id_pattern: a JavaScript regular expression matching a whole job id in inline code.
    """

    viewers: list[int] = field(default_factory=list)
    title: str = "Errand sandbox"
    jobs: JobLookup | None = None
    job_id_pattern: str = ""


PAGE_KEY: web.AppKey[PageConfig] = web.AppKey("discord_emulator.page", PageConfig)


def _emu(request: web.Request) -> Control:
    return request.app[CONTROL_KEY]


def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def _user_id(request: web.Request) -> int:
    raw = request.query.get("user_id", "")
    if not raw.isdigit() or int(raw) not in _emu(request).state.users:
        raise web.HTTPBadRequest(text="user_id: unknown user")
    return int(raw)


def can_see_channel(emu: Control, channel: Channel, user_id: int) -> bool:
    """DMs are seen by their recipients; guild channels by the guild's members."""
    if channel.type == DM:
        return user_id in channel.recipient_ids
    if channel.guild_id is None:
        return False
    return emu.state.member(channel.guild_id, user_id) is not None


def can_see_message(msg: Message, user_id: int) -> bool:
    """Ephemeral messages are only shown to the user whose interaction they answer."""
    if msg.deleted:
        return False
    if not msg.ephemeral:
        return True
    meta = msg.interaction_metadata or {}
    return str((meta.get("user") or {}).get("id")) == str(user_id)


def _channel_entry(emu: Control, channel: Channel) -> dict[str, Any]:
    kind = {TEXT: "text", FORUM: "forum", DM: "dm"}.get(channel.type, "thread")
    name = channel.name
    if channel.type == DM:
        name = emu.bot_user.username
    return {
        "id": str(channel.id),
        "name": name,
        "kind": kind,
        "parent_id": str(channel.parent_id) if channel.parent_id else None,
        "archived": bool(channel.thread and channel.thread.archived),
    }


async def world(request: web.Request) -> web.Response:
    """The acting user's sidebar: guild channels with their threads, and the user's DMs."""
    emu = _emu(request)
    config = request.app[PAGE_KEY]
    viewers = [emu.state.users[v] for v in config.viewers if v in emu.state.users]
    user_id = _user_id(request) if "user_id" in request.query else viewers[0].id
    channels = []
    for guild in emu.state.guilds.values():
        if user_id not in guild.members:
            continue
        for cid in guild.channel_ids:
            channel = emu.state.channels[cid]
            entry = _channel_entry(emu, channel)
            entry["guild"] = guild.name
            threads = sorted(emu.threads(channel), key=lambda t: t.id, reverse=True)
            entry["threads"] = [_channel_entry(emu, t) for t in threads]
            channels.append(entry)
    for channel in emu.state.channels.values():
        if channel.type == DM and user_id in channel.recipient_ids:
            channels.append(_channel_entry(emu, channel) | {"threads": []})
    return web.json_response(
        {
            "title": config.title,
            "user_id": str(user_id),
            "viewers": [{"id": str(u.id), "name": u.username} for u in viewers],
            "bot": {"id": str(emu.bot_user.id), "name": emu.bot_user.username},
            "channels": channels,
            "job_id_pattern": config.job_id_pattern if config.jobs else "",
        }
    )


def message_view(emu: Control, msg: Message) -> dict[str, Any]:
    """A message as the page draws it: Discord's payload plus version count and flags, and
    for a message that started a thread the thread's newest message."""
    data = emu.state.message_payload(msg)
    data["ephemeral"] = msg.ephemeral
    data["loading"] = bool(msg.flags & FLAG_LOADING)
    data["version_count"] = len(msg.versions)
    data["command"] = _command_path(emu, msg)
    data["thread_preview"] = thread_preview(emu, msg.thread_id) if msg.thread_id else None
    return data


PREVIEW_LENGTH = 120


def thread_preview(emu: Control, thread_id: int) -> dict[str, Any] | None:
    """What Discord's client shows under a message that started a thread: the thread's newest
    message (its author, and the first line of its text, cut at a word), or None."""
    for mid in reversed(emu.state.channel_messages.get(thread_id, [])):
        msg = emu.state.messages[mid]
        if msg.deleted or msg.ephemeral or msg.type not in SENT_TYPES:
            continue
        line = msg.content.strip().split("\n", 1)[0]
        if len(line) > PREVIEW_LENGTH:
            line = line[:PREVIEW_LENGTH].rsplit(" ", 1)[0] + "…"
        author = emu.state.users[msg.author_id].payload()
        return {"author": author, "content": line}
    return None


def _command_path(emu: Control, msg: Message) -> str | None:
    """``job status`` for an answer to ``/job status``: the full path Discord's client shows
    above a command's answer (the interaction's data, else the metadata's top-level name)."""
    meta = msg.interaction_metadata or {}
    if not meta.get("name"):
        return None
    inter = emu.state.interactions.get(int(meta.get("id") or 0))
    if inter is None:
        return str(meta["name"])
    parts = [str(inter.data.get("name"))]
    options = inter.data.get("options") or []
    while options and options[0].get("type") in (1, 2):  # SUB_COMMAND, SUB_COMMAND_GROUP
        parts.append(str(options[0]["name"]))
        options = options[0].get("options") or []
    return " ".join(parts)


async def messages(request: web.Request) -> web.Response:
    emu = _emu(request)
    user_id = _user_id(request)
    channel = emu.state.channels.get(int(request.match_info["channel_id"]))
    if channel is None or not can_see_channel(emu, _parent_or_self(emu, channel), user_id):
        raise web.HTTPNotFound(text="unknown channel")
    visible = [message_view(emu, m) for m in emu.history(channel) if can_see_message(m, user_id)]
    return web.json_response({"channel": _channel_entry(emu, channel), "messages": visible})


def _parent_or_self(emu: Control, channel: Channel) -> Channel:
    if channel.parent_id is not None and channel.parent_id in emu.state.channels:
        return emu.state.channels[channel.parent_id]
    return channel


def commands_for(
    emu: Control, channel: Channel, user_id: int | None = None
) -> list[dict[str, Any]]:
    """The commands usable in ``channel``: the guild's, then the global ones; for a user, only
    those Discord's client offers them (``default_member_permissions``)."""
    app = emu.application
    if app is None:
        return []
    scoped = list(app.guild_commands.get(channel.guild_id, [])) if channel.guild_id else []
    found = scoped + list(app.global_commands)
    if user_id is None:
        return found
    builder = InteractionBuilder(emu.state, app)
    return [c for c in found if builder.may_use(c, user_id, channel)]


def _lookup(emu: Control) -> dict[str, int]:
    names: dict[str, int] = {u.username.lower(): u.id for u in emu.state.users.values()}
    for ch in emu.state.channels.values():
        if ch.name:
            names.setdefault(f"#{ch.name.lower()}", ch.id)
    return names


_TYPED_MENTION = re.compile(r"(?<![\w<])@([A-Za-z0-9_.]{2,32})")


def typed_mentions(emu: Control, text: str) -> str:
    """``@name`` typed for a member becomes the mention Discord's client sends (``<@id>``)."""
    users = {u.username.lower(): u.id for u in emu.state.users.values()}

    def mention(match: re.Match[str]) -> str:
        found = users.get(match[1].lower())
        return f"<@{found}>" if found is not None else match[0]

    return _TYPED_MENTION.sub(mention, text)


async def send(request: web.Request) -> web.Response:
    """Send the composer's text as ``user_id`` in ``channel_id``: a slash command or a message."""
    emu = _emu(request)
    body = await json_body(request)
    try:
        user_id, channel_id = int(body["user_id"]), int(body["channel_id"])
        channel = emu.state.channels[channel_id]
    except (KeyError, TypeError, ValueError):
        return web.json_response({"error": "unknown user or channel"}, status=400)
    text = str(body.get("text", "")).strip()
    if not text:
        return web.json_response({"error": "nothing to send"}, status=400)
    if not can_see_channel(emu, _parent_or_self(emu, channel), user_id):
        return web.json_response({"error": "you cannot see this channel"}, status=403)
    if not text.startswith("/"):
        if channel.type == FORUM:
            return web.json_response({"error": "post in a thread of this forum"}, status=400)
        msg = emu.send_message(user_id, channel, typed_mentions(emu, text))
        return web.json_response({"message_id": str(msg.id)})
    offered = commands_for(emu, channel, user_id)
    try:
        if isinstance(body.get("options"), dict):  # the option fields
            fields = {str(k): str(v) for k, v in body["options"].items()}
            inv = parse_fields(text.removeprefix("/"), fields, offered, lookup=_lookup(emu))
        else:
            inv = parse(text, offered, lookup=_lookup(emu))
        handle = await emu.invoke_slash(user_id, channel, inv.path, inv.options)
    except (CommandLineError, LookupError, ValueError, PermissionError) as exc:
        return web.json_response({"error": str(exc).strip("'\"")}, status=400)
    return web.json_response({"interaction_id": str(handle.id)})


async def command_options(request: web.Request) -> web.Response:
    """The options of every command usable in a channel, for the composer's option fields."""
    emu = _emu(request)
    channel = emu.state.channels.get(int(request.query.get("channel_id", "0") or 0))
    found = leaf_options(commands_for(emu, channel)) if channel is not None else {}
    return web.json_response({"commands": found})


AUTOCOMPLETE_WAIT = 2.0


async def complete(request: web.Request) -> web.Response:
    """Completions for the composer: paths, options and choices from the registered commands;
    for an option the bot autocompletes, the bot's own choices (an autocomplete interaction)."""
    emu = _emu(request)
    channel = emu.state.channels.get(int(request.query.get("channel_id", "0") or 0))
    if channel is None:
        return web.json_response({"suggestions": []})
    text = request.query.get("text", "")
    user_id = _user_id(request) if "user_id" in request.query else None
    commands = commands_for(emu, channel, user_id)
    typing = focus(text, commands, lookup=_lookup(emu))
    if typing is not None and user_id is not None:
        found = await _bot_choices(emu, user_id, channel, typing)
    else:
        found = suggest(text, commands)
    return web.json_response(
        {
            "suggestions": [
                {"text": s.text, "label": s.label, "description": s.description} for s in found
            ]
        }
    )


async def _bot_choices(
    emu: Control, user_id: int, channel: Channel, typing: Focus
) -> list[Suggestion]:
    values = typing.options | {typing.name: typing.value.strip()}
    try:
        handle = await emu.autocomplete(user_id, channel, typing.path, values, typing.name)
        choices = await handle.wait_choices(AUTOCOMPLETE_WAIT)
    except (LookupError, ValueError, TimeoutError):
        return []
    # A choice like ``steps=`` is to be continued; anything else is a finished value.
    return [
        Suggestion(
            f"{typing.base}{c['value']}{'' if str(c['value']).endswith(('=', ':')) else ' '}",
            str(c["name"]),
            f"{typing.name}: suggested",
        )
        for c in choices
    ]


async def job(request: web.Request) -> web.Response:
    """A job's state and every event of it (who, what, when, why), for the timeline."""
    lookup = request.app[PAGE_KEY].jobs
    if lookup is None:
        raise web.HTTPNotFound(text="no jobs here")
    found = await lookup(request.match_info["job_id"], _user_id(request))
    if found is None:
        raise web.HTTPNotFound(text="No such job.")
    return web.json_response(found)


async def favicon(request: web.Request) -> web.Response:
    return web.Response(
        text=_static("favicon.svg"),
        content_type="image/svg+xml",
        headers={"Cache-Control": "max-age=3600"},
    )


async def index(request: web.Request) -> web.Response:
    html = _static("index.html").replace("{{title}}", request.app[PAGE_KEY].title)
    return web.Response(text=html, content_type="text/html")


async def static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC_FILES:
        raise web.HTTPNotFound()
    return web.Response(
        text=_static(name),
        content_type=STATIC_FILES[name],
        headers={"Cache-Control": "no-cache"},
    )


def add_page_routes(app: web.Application, config: PageConfig) -> None:
    """Serve the chat page on ``app`` (an emulator's aiohttp application)."""
    app[PAGE_KEY] = config
    r = app.router
    r.add_get("/", index)
    r.add_get("/_page/{name}", static)
    r.add_get("/_emulator/page/world", world)
    r.add_get("/_emulator/page/channels/{channel_id}/messages", messages)
    r.add_post("/_emulator/page/send", send)
    r.add_get("/_emulator/page/complete", complete)
    r.add_get("/_emulator/page/commands", command_options)
    r.add_get("/_emulator/page/jobs/{job_id}", job)
    r.add_get("/favicon.ico", favicon)
