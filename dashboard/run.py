"""The dashboard as a part of a process: ``errand dashboard`` (a process of its own) and
``errand run --dashboard`` (beside the bot and a worker), each a
:class:`~jobs.transport.Process`, the engine's one assembly of a long-running process.

The part starts the web server on the open engine's store and pool, runs the one LISTEN
connection of the live updates until the process stops, then closes the server. Without a
configured login it does not start: :func:`checked_settings` raises with a line that says what
to set (exit 2).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from dashboard.app import build_app
from dashboard.errors import CannotServe
from dashboard.live import Live
from dashboard.settings import DashboardSettings
from jobs.transport import Process, get_logger

log = get_logger("dashboard")

SHUTDOWN_SECONDS = 1.0
"""Open pages (event streams) get this long to end when the process stops."""


def checked_settings(host: str | None = None, port: int | None = None) -> DashboardSettings:
    """The dashboard's settings (the command line's host and port on top).

    Raises:
        CannotServe: no login is configured, or its settings do not fit.
    """
    from pydantic import ValidationError

    overrides: dict[str, Any] = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    try:
        settings = DashboardSettings(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CannotServe(f"ERRAND_DASHBOARD_{where.upper()}: {first['msg']}") from None
    problem = settings.login_problem()
    if problem is not None:
        raise CannotServe(f"the dashboard does not start: {problem}")
    return settings


def dashboard_part(settings: DashboardSettings) -> Callable[[Process], Awaitable[None]]:
    """The dashboard as a part of ``process``: serves until the process stops."""

    async def start(process: Process) -> None:
        engine = process.engine
        live = Live(engine.store, engine.dsn)
        app = build_app(engine.store, process.settings, settings, live, engine.pool)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_SECONDS)
        await runner.setup()
        try:
            site = web.TCPSite(runner, settings.host, settings.port)
            await site.start()
            host, port = runner.addresses[0][:2]
            process.detail["dashboard"] = f"http://{host}:{port}/"
            log.info("dashboard.listening", host=host, port=port)
            await live.run(process.stop)
        finally:
            await runner.cleanup()

    return start


def serve(settings: DashboardSettings) -> int:
    """``errand dashboard``: the dashboard in a process of its own, until SIGTERM/SIGINT."""
    # The token is masked by value wherever it turns up (a process that runs the dashboard
    # beside the bot is given it the same way, bot/cli.py).
    process = Process(parts={"dashboard": dashboard_part(settings)}, secrets=[settings.token])
    try:
        return process.run()
    except OSError as exc:  # the port is taken, or PostgreSQL is unreachable: one line
        raise CannotServe(f"cannot serve the dashboard: {exc}") from None
