"""A local HTTP server speaking the OpenAI chat-completions wire format, with scripted replies.

It is the outer edge of the agent tests: the real ``openai`` client talks HTTP to it. It is
stateless per request: a script is chosen by a ``[script:NAME]`` marker in the first user
message, and the reply is the script's entry number *k*, where *k* is how many assistant
messages the request already carries. An entry is a dict with any of:

- ``content``: the final answer text;
- ``tool_calls``: ``[{"name": ..., "arguments": {...}}, ...]``;
- ``usage``: ``{"prompt_tokens": n, "completion_tokens": m}`` (default: small numbers);
- ``delay``: seconds to wait before answering (a slow model; an abort by the client is seen);
- ``status`` / ``error``: an HTTP error reply instead;
- ``omit_usage``: misbehave by sending no ``usage`` at all (some local servers do);
- ``ignore_max_tokens``: misbehave by sending the whole reply whatever ``max_tokens`` says;
- ``echo_key``: with ``status`` 401, the error message quotes the API key the request carried,
  as some OpenAI-compatible servers do ("Incorrect API key provided: <key>").

Otherwise it keeps the real service's rules:

- ``max_tokens`` (or ``max_completion_tokens``): a reply longer than that is cut to it (4
  characters a token) with ``finish_reason`` ``length``, and its ``completion_tokens`` never
  exceed it;
- a request without ``Authorization: Bearer <key>`` is refused with 401;
- a request without ``model`` or ``messages`` is refused with 400, and so is a conversation the
  API refuses: an assistant message with ``tool_calls`` not followed by a ``tool`` message
  answering each of its ``tool_call_id``s, or a ``tool`` message that answers no call of the
  assistant message before it (the API's "messages with role 'tool' must be a response to a
  preceding message with 'tool_calls'").

What it saw (bodies, authorization headers, aborted requests) is kept for the tests to assert.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

_MARK = re.compile(r"\[script:([A-Za-z0-9_-]+)\]")


@dataclass
class ChatServer:
    """The fake provider's scripts and what it saw."""

    scripts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    """When each request arrived (``time.monotonic()``)."""
    started: asyncio.Event = field(default_factory=asyncio.Event)
    url: str = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.arrivals.append(time.monotonic())
        body = await request.json()
        self.requests.append(body)
        self.authorizations.append(request.headers.get("Authorization", ""))
        messages = body.get("messages", [])
        refused = _refusal(body, self.authorizations[-1])
        if refused is not None:
            status, text = refused
            error = {"message": text, "type": "invalid_request_error", "code": None}
            return web.json_response({"error": error}, status=status)
        name = _script_of(body)
        mark = _MARK.search(f"[script:{name}]") if name else None
        script = self.scripts.get(mark[1] if mark else "default", [{"content": "ok"}])
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        entry = script[min(turn, len(script) - 1)]
        self.started.set()
        if entry.get("delay"):
            deadline = time.monotonic() + float(entry["delay"])
            while time.monotonic() < deadline:
                transport = request.transport
                if transport is None or transport.is_closing():
                    self.aborted.append(mark[1] if mark else "default")
                    return web.Response(status=499)
                await asyncio.sleep(0.02)
        if "status" in entry:
            message = entry.get("error", "scripted error")
            if entry.get("echo_key"):
                key = self.authorizations[-1].removeprefix("Bearer ")
                message = f"Incorrect API key provided: {key}. Check your key and try again."
            return web.json_response(
                {
                    "error": {
                        "message": message,
                        "type": "server_error",
                        "code": None,
                    }
                },
                status=int(entry["status"]),
            )
        return web.json_response(self._completion(body, entry, turn))

    def count(self, script: str) -> int:
        """Requests made for ``script`` (by its marker in the first user message)."""
        return sum(1 for body in self.requests if _script_of(body) == script)

    def _completion(self, body: dict[str, Any], entry: dict[str, Any], turn: int) -> dict[str, Any]:
        content = entry.get("content")
        usage = {"prompt_tokens": 10, "completion_tokens": 5} | entry.get("usage", {})
        finish = "tool_calls" if entry.get("tool_calls") else "stop"
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if limit is not None and not entry.get("ignore_max_tokens"):
            if isinstance(content, str) and len(content) > 4 * int(limit):
                content, finish = content[: 4 * int(limit)], "length"
            usage["completion_tokens"] = min(usage["completion_tokens"], int(limit))
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if entry.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": f"call_{turn}_{i}",
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": json.dumps(c.get("arguments", {})),
                    },
                }
                for i, c in enumerate(entry["tool_calls"])
            ]
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        reply: dict[str, Any] = {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish,
                }
            ],
            "usage": usage,
        }
        if entry.get("omit_usage"):
            del reply["usage"]
        return reply


def _refusal(body: dict[str, Any], authorization: str) -> tuple[int, str] | None:
    """What the real API answers a request it refuses (status, message), or None."""
    if not authorization.startswith("Bearer ") or not authorization.removeprefix("Bearer "):
        return 401, "You didn't provide an API key."
    messages = body.get("messages")
    if not body.get("model") or not isinstance(messages, list) or not messages:
        return 400, "'model' and a non-empty 'messages' are required properties."
    waiting: set[str] = set()  # tool_call_ids of the last assistant message not yet answered
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call = message.get("tool_call_id")
            if call not in waiting:
                return 400, (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' ({call!r} answers none)."
                )
            waiting.discard(call)
            continue
        if waiting:
            return 400, (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(sorted(waiting))}"
            )
        if role == "assistant":
            waiting = {c.get("id") for c in message.get("tool_calls") or []}
    if waiting:
        return 400, f"tool_call_ids without response messages: {', '.join(sorted(waiting))}"
    return None


def _script_of(body: dict[str, Any]) -> str | None:
    messages = body.get("messages", [])
    first_user = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
    mark = _MARK.search(str(first_user))
    return mark[1] if mark else None


@asynccontextmanager
async def chat_server(scripts: dict[str, list[dict[str, Any]]]) -> AsyncIterator[ChatServer]:
    """Serve ``scripts`` on 127.0.0.1 (a free port); ``server.url`` is the ``/v1`` base URL."""
    server = ChatServer(scripts=scripts)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server.handle)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
    port = sockets[0].getsockname()[1]
    server.url = f"http://127.0.0.1:{port}/v1"
    try:
        yield server
    finally:
        await runner.cleanup()
