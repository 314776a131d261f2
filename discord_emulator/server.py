"""The emulator process: one aiohttp app serving REST under ``/api/v10``, the gateway at
``/gateway`` and the control API under ``/_emulator/``, bound to 127.0.0.1 on a free port.

:class:`Emulator` ties together state, clock, gateway, rate limits and faults; its control
methods (creating guilds, invoking slash commands, reading history...) come from
:class:`~discord_emulator.control.Control`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from aiohttp import web

from . import errors
from . import permissions as P
from .actions import Actions
from .clock import VirtualClock
from .config import EmulatorConfig, RequestRecord
from .control import CONTROL_KEY, Control
from .control_http import add_control_routes
from .events import EventHub
from .faults import Disconnect, Faults
from .gateway import Gateway
from .models import DM, Channel
from .ratelimit import RateLimiter
from .rest import API_PREFIX, add_routes
from .rest.common import APP_KEY, EMU_KEY, json_response
from .rest.messages import get_attachment
from .state import State

# EmulatorConfig and RequestRecord live in .config (every part reads them) and stay importable
# from here, where they were first defined.
__all__ = ["Emulator", "EmulatorConfig", "RequestRecord", "stop_accepting"]

log = logging.getLogger(__name__)


async def stop_accepting(server: asyncio.AbstractServer | None) -> None:
    """Stop taking new connections, and let those already accepted reach their protocol, before
    ``server.close()``.

    Why: CPython's asyncio (3.11 here) builds the transport of an accepted connection in a task
    of its own. When ``Server.close()`` runs between the accept and that task, the transport's
    ``Server._attach`` assertion fails, asyncio swallows the error, and the socket is never
    closed: a ResourceWarning when it is collected (a client reconnecting as a test stops its
    server). The owner closes connections that reached it; these never reach anyone.
    """
    if server is None:
        return
    loop = asyncio.get_running_loop()
    for sock in getattr(server, "sockets", None) or ():
        loop.remove_reader(sock.fileno())
    # Accepted, then transport built, then connection_made, then (for asyncio streams) the
    # client callback's task: a few loop turns, each of which zero-sleeps give in order.
    for _ in range(5):
        await asyncio.sleep(0)


class Emulator(Control):
    """A local Discord. Use ``async with Emulator() as emu:`` or ``await emu.start()``."""

    def __init__(self, config: EmulatorConfig | None = None) -> None:
        self.config = config or EmulatorConfig()
        self.clock = VirtualClock()
        self.state = State(self.clock)
        self.events = EventHub()
        self.gateway = Gateway(self)
        self.limiter = RateLimiter(self.config.ratelimits)
        self.faults = Faults()
        self.actions = Actions(self)
        self.requests: deque[RequestRecord] = deque(maxlen=20000)
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        # Extra routes (e.g. the chat page) added to every app this emulator builds.
        self.app_setup: list[Callable[[web.Application], None]] = []
        self.clock.on_advance(self.actions.sweep_archives)
        Control.__init__(self)

    # ----- addresses ---------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("emulator not started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self.config.host}:{self._port or 0}"

    @property
    def api_base(self) -> str:
        return self.base_url + API_PREFIX

    @property
    def gateway_url(self) -> str:
        return f"ws://{self.config.host}:{self._port or 0}/gateway"

    # ----- lifecycle ---------------------------------------------------------------------
    def build_app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware], client_max_size=50 * 1024 * 1024)
        app[EMU_KEY] = self
        app[CONTROL_KEY] = self
        add_routes(app)
        app.router.add_get("/gateway", self.gateway.handle)
        app.router.add_get("/gateway/", self.gateway.handle)
        app.router.add_get("/attachments/{channel_id}/{attachment_id}/{filename}", get_attachment)
        add_control_routes(app)
        for setup in self.app_setup:
            setup(app)
        return app

    async def start(self) -> Emulator:
        if self._runner is not None:
            return self
        runner = web.AppRunner(self.build_app(), access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(
            runner, self.config.host, self._port or self.config.port, reuse_address=True
        )
        await site.start()
        self._runner = runner
        if self._port is None:
            server = site._server
            assert server is not None
            sockets = getattr(server, "sockets", None) or []
            self._port = sockets[0].getsockname()[1]
        log.info("discord emulator listening on %s", self.base_url)
        return self

    async def stop(self) -> None:
        if self._runner is None:
            return
        for site in self._runner.sites:
            await stop_accepting(site._server)
        self.faults.clear()  # answers held back go out now, not at the runner's timeout
        await self.gateway.close_all()
        await self._runner.cleanup()
        self._runner = None

    async def restart(self) -> None:
        """Drop every socket and serve again on the same port; all state (and gateway
        sessions, so clients can RESUME) is kept."""
        await self.stop()
        await self.start()
        self.actions.publish("restart", {})

    async def __aenter__(self) -> Emulator:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ----- permissions helpers used by handlers ------------------------------------------
    def permissions(self, channel: Channel, user_id: int) -> int:
        return P.channel_permissions(self.state, channel, user_id)

    def require_view(self, channel: Channel, user_id: int) -> None:
        if channel.type == DM:
            return
        if not P.has(self.permissions(channel, user_id), P.VIEW_CHANNEL):
            raise errors.missing_access()

    # ----- middleware: faults, auth, global and per-route limits, error bodies -------------
    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not request.path.startswith(API_PREFIX + "/"):
            response: web.StreamResponse = await handler(request)
            return response
        resource = request.match_info.route.resource
        route = resource.canonical.removeprefix(API_PREFIX) if resource is not None else None
        status = 500
        code: int | None = None
        body: Any = None
        try:
            await self.faults.apply(request.method, request.path)
            if route is None:
                raise errors.not_found_route()
            # Interaction callbacks and the interaction webhook authenticate by token in the
            # URL and are exempt from the global rate limit (Rate Limits docs).
            token_route = route.startswith("/interactions/") or route.startswith("/webhooks/")
            auth = request.headers.get("Authorization", "")
            if not token_route:
                app = (
                    self.state.app_by_token(auth.removeprefix("Bot "))
                    if auth.startswith("Bot ")
                    else None
                )
                if app is None:
                    raise errors.unauthorized()
                request[APP_KEY] = app
                self.limiter.check_global(app.token, self.clock.time())
            major = next(
                (
                    request.match_info[k]
                    for k in ("channel_id", "guild_id", "token")
                    if k in request.match_info
                ),
                "",
            )
            headers = self.limiter.check_route(
                f"{request.method} {route}", major, self.clock.time()
            )
            try:
                response = await handler(request)
            except web.HTTPMethodNotAllowed:
                raise errors.method_not_allowed() from None
            except web.HTTPNotFound:
                raise errors.not_found_route() from None
            response.headers.update(headers)
            status = response.status
            await self.faults.hold_answer(request.method, request.path)
            return response
        except Disconnect:
            status = 0
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)  # never written: the connection is gone
        except errors.DiscordError as exc:
            status, code, body = exc.status, exc.code, exc.body()
            resp = json_response(body, status=exc.status)
            resp.headers.update(exc.headers)
            if exc.status == 429:
                resp.headers["Via"] = "1.1 google"
            return resp
        finally:
            self.requests.append(
                RequestRecord(
                    request.method, request.path, route, status, code, self.clock.time(), body
                )
            )

    def request_log(
        self, *, path_contains: str = "", status: int | None = None
    ) -> list[RequestRecord]:
        return [
            r
            for r in self.requests
            if path_contains in r.path and (status is None or r.status == status)
        ]

    def dm_channel(self, bot_id: int, user_id: int) -> Channel:
        for channel in self.state.channels.values():
            if channel.type == DM and set(channel.recipient_ids) == {bot_id, user_id}:
                return channel
        channel = Channel(
            id=self.state.new_id(), type=DM, guild_id=None, recipient_ids=[user_id, bot_id]
        )
        self.state.channels[channel.id] = channel
        return channel
