"""The HTTP control API: the :class:`~discord_emulator.control.Control` operations as JSON
routes under ``/_emulator/``, plus a WebSocket event stream at ``/_emulator/events``.

The sandbox and the browser view use these; Python tests call the control methods directly.
:func:`add_control_routes` mounts them on the emulator's aiohttp app.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import weakref
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from .component_input import Upload
from .control import CONTROL_KEY, Control, InteractionHandle
from .models import TEXT

# The open event streams, closed when the emulator stops (see close_event_streams).
EVENT_STREAMS: web.AppKey[weakref.WeakSet[web.WebSocketResponse]] = web.AppKey(
    "discord_emulator.event_streams"
)


def _emu(request: web.Request) -> Control:
    return request.app[CONTROL_KEY]


async def json_body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object ({} for an empty body). A body that is not a JSON object is
    answered 400 with a JSON ``error``, as Discord's API answers a malformed body, never a 500
    and a traceback in the log."""
    if not request.can_read_body:
        return {}
    try:
        data = await request.json()
    except ValueError:  # not JSON, or not UTF-8 (UnicodeDecodeError is a ValueError)
        data = None
    if not isinstance(data, dict):
        raise web.HTTPBadRequest(
            text=json.dumps({"error": "the request body must be a JSON object"}),
            content_type="application/json",
        )
    return data


async def http_state(request: web.Request) -> web.Response:
    return web.json_response(_emu(request).snapshot())


async def http_create_user(request: web.Request) -> web.Response:
    body = await json_body(request)
    user = _emu(request).create_user(body.get("username", "user"))
    return web.json_response(user.payload())


async def http_create_guild(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await json_body(request)
    guild = emu.create_guild(body.get("name", "Guild"))
    return web.json_response(emu.state.guild_create_payload(guild))


async def http_create_channel(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await json_body(request)
    channel = emu.create_channel(
        int(body["guild_id"]), body.get("name", "general"), type=int(body.get("type", TEXT))
    )
    return web.json_response(emu.state.channel_payload(channel))


async def http_add_member(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await json_body(request)
    member = emu.add_member(
        int(request.match_info["guild_id"]),
        int(body["user_id"]),
        roles=[int(r) for r in body.get("roles", [])],
    )
    return web.json_response(emu.state.member_payload(member))


async def http_delete_channel(request: web.Request) -> web.Response:
    emu = _emu(request)
    channel = emu.delete_channel(int(request.match_info["channel_id"]))
    return web.json_response(emu.state.channel_payload(channel))


async def http_send_message(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await json_body(request)
    msg = emu.send_message(
        int(body["user_id"]), int(request.match_info["channel_id"]), body.get("content", "")
    )
    return web.json_response(emu.state.message_payload(msg))


async def http_edit_message(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await json_body(request)
    try:
        msg = emu.edit_message(
            int(body["user_id"]), int(request.match_info["message_id"]), body.get("content", "")
        )
    except PermissionError as exc:
        return web.json_response({"error": str(exc)}, status=403)
    return web.json_response(emu.state.message_payload(msg))


async def http_delete_message(request: web.Request) -> web.Response:
    emu = _emu(request)
    try:
        emu.delete_message(int(request.query["user_id"]), int(request.match_info["message_id"]))
    except PermissionError as exc:
        return web.json_response({"error": str(exc)}, status=403)
    except LookupError as exc:
        return web.json_response({"error": str(exc)}, status=404)
    return web.Response(status=204)


async def http_history(request: web.Request) -> web.Response:
    emu = _emu(request)
    return web.json_response(emu.history_payload(int(request.match_info["channel_id"])))


async def http_invoke(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await json_body(request)
    user, command = int(body["user_id"]), str(body["command"])
    # type 2 / 3: a user / message command on target_id (Application Command Types).
    ctype = int(body.get("type", 1))
    try:
        if ctype == 2:
            channel = int(body["channel_id"])
            handle = await emu.invoke_user_command(user, channel, command, int(body["target_id"]))
        elif ctype == 3:
            handle = await emu.invoke_message_command(user, int(body["target_id"]), command)
        else:
            handle = await emu.invoke_slash(
                user, int(body["channel_id"]), command, body.get("options") or {}
            )
    except (LookupError, ValueError, PermissionError) as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response({"interaction_id": str(handle.id)})


async def http_click(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await json_body(request)
    try:
        handle = await emu.click(
            int(body["user_id"]),
            int(body["message_id"]),
            str(body["custom_id"]),
            values=body.get("values"),
        )
    except (LookupError, ValueError, KeyError) as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response({"interaction_id": str(handle.id)})


def _modal_value(raw: Any) -> Any:
    """A submitted value as :meth:`Control.submit_modal` takes it: a text input's string, a
    select's ids, or a file upload's files given as ``{filename, content_type, data}`` with
    the bytes in base64."""
    if isinstance(raw, list) and raw and all(isinstance(f, dict) for f in raw):
        return [
            Upload(
                str(f["filename"]),
                base64.b64decode(f["data"], validate=True),
                f.get("content_type"),
            )
            for f in raw
        ]
    return raw


async def http_submit_modal(request: web.Request) -> web.Response:
    """``{user_id, interaction_id, values: {custom_id: value}}``: the user submits the modal the
    bot answered ``interaction_id`` with (a file upload's value is a list of files)."""
    emu = _emu(request)
    body = await json_body(request)
    try:
        inter = emu.state.interactions[int(body["interaction_id"])]
        raw = body.get("values") or {}
        values = {str(k): _modal_value(v) for k, v in raw.items()}
        handle = await emu.submit_modal(int(body["user_id"]), InteractionHandle(emu, inter), values)
    except (LookupError, ValueError, TypeError, binascii.Error) as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response({"interaction_id": str(handle.id)})


async def http_interaction(request: web.Request) -> web.Response:
    emu = _emu(request)
    inter = emu.state.interactions.get(int(request.match_info["interaction_id"]))
    if inter is None:
        return web.json_response({"error": "unknown interaction"}, status=404)
    handle = InteractionHandle(emu, inter)
    original = handle.original
    return web.json_response(
        {
            "id": str(inter.id),
            "response_type": inter.response_type,
            "original": emu.state.message_payload(original) if original else None,
            "followups": [emu.state.message_payload(m) for m in handle.followups],
            "choices": inter.autocomplete_choices,
            "modal": inter.modal,
        }
    )


async def http_advance(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await json_body(request)
    emu.advance(float(body.get("seconds", 0)))
    return web.json_response({"now": emu.clock.iso()})


async def http_faults(request: web.Request) -> web.Response:
    emu = _emu(request)
    body = await json_body(request)
    kind = body.get("kind")
    if kind == "latency":
        emu.faults.add_latency(float(body.get("seconds", 0)), body.get("path_contains"))
    elif kind == "status":
        emu.faults.fail_next(
            int(body.get("status", 500)),
            int(body.get("count", 1)),
            path_contains=body.get("path_contains"),
            method=body.get("method"),
        )
    elif kind == "ratelimit":
        emu.faults.ratelimit_next(
            int(body.get("count", 1)),
            retry_after=float(body.get("retry_after", 0.05)),
            path_contains=body.get("path_contains"),
            method=body.get("method"),
            is_global=bool(body.get("global", False)),
        )
    elif kind == "drop_gateway":
        emu.drop_gateway()
    elif kind == "restart":
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(emu.restart()))
    elif kind == "clear":
        emu.faults.clear()
    else:
        return web.json_response({"error": f"unknown fault kind {kind!r}"}, status=400)
    return web.json_response({"ok": True})


async def http_events(request: web.Request) -> web.WebSocketResponse:
    """A WebSocket streaming every state-change event as JSON (for a live browser view)."""
    emu = _emu(request)
    ws = web.WebSocketResponse(heartbeat=30)
    await ws.prepare(request)
    request.app[EVENT_STREAMS].add(ws)
    sub = emu.subscribe(maxsize=1000)

    async def pump() -> None:
        async for ev in sub:
            await ws.send_json(
                {
                    "kind": ev.kind,
                    "at": ev.at,
                    "data": ev.data,
                    "extra": {k: str(v) for k, v in ev.extra.items()},
                }
            )

    task = asyncio.create_task(pump())
    try:
        async for msg in ws:
            if msg.type == WSMsgType.ERROR:
                break
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        sub.close()
    return ws


async def close_event_streams(app: web.Application) -> None:
    """Close every event stream as the server shuts down (the page then shows it is offline
    and reconnects). Left open, each would hold the shutdown for the runner's whole
    ``shutdown_timeout`` and then be cancelled: a sandbox with its page open took 2 s longer
    to stop."""
    streams = app[EVENT_STREAMS]
    for ws in list(streams):
        await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")


def add_control_routes(app: web.Application) -> None:
    app[EVENT_STREAMS] = weakref.WeakSet()
    app.on_shutdown.append(close_event_streams)
    r = app.router
    r.add_get("/_emulator/state", http_state)
    r.add_post("/_emulator/users", http_create_user)
    r.add_post("/_emulator/guilds", http_create_guild)
    r.add_post("/_emulator/guilds/{guild_id}/members", http_add_member)
    r.add_post("/_emulator/channels", http_create_channel)
    r.add_delete("/_emulator/channels/{channel_id}", http_delete_channel)
    r.add_post("/_emulator/channels/{channel_id}/messages", http_send_message)
    r.add_patch("/_emulator/channels/{channel_id}/messages/{message_id}", http_edit_message)
    r.add_delete("/_emulator/channels/{channel_id}/messages/{message_id}", http_delete_message)
    r.add_get("/_emulator/channels/{channel_id}/history", http_history)
    r.add_post("/_emulator/interactions", http_invoke)
    r.add_post("/_emulator/clicks", http_click)
    r.add_post("/_emulator/modals", http_submit_modal)
    r.add_get("/_emulator/interactions/{interaction_id}", http_interaction)
    r.add_post("/_emulator/clock/advance", http_advance)
    r.add_post("/_emulator/faults", http_faults)
    r.add_get("/_emulator/events", http_events)
