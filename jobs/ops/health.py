"""The HTTP endpoint of a long-running Errand process: ``/healthz``, ``/readyz``, ``/metrics``.

- ``/healthz`` — the process and its event loop answer (liveness). Always 200 while alive.
- ``/readyz`` — every readiness check passes (200) or not (503, naming the failing checks).
  Built in: ``database`` (a query answers) and ``migrations`` (none pending). Transports add
  their own (the bot registers ``gateway``); a process with a worker adds ``worker``
  (claiming, not draining).
- ``/metrics`` — this process's metrics and the database gauges read at scrape time (see
  :mod:`jobs.ops.metrics`), served by prometheus-client's own aiohttp handler: the format
  follows the scraper's ``Accept`` header (Prometheus text or OpenMetrics), as with any exporter.

Configured by ``ERRAND_HEALTH_PORT`` (unset: off; 0: any free port) and ``ERRAND_HEALTH_HOST``.
Started by every long-running process (:mod:`jobs.ops.process`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable

import asyncpg
from aiohttp import web
from prometheus_client.aiohttp import make_aiohttp_handler

from jobs.engine.migrate import pending
from jobs.logs import get_logger
from jobs.ops import metrics
from jobs.secrets import scrub

log = get_logger("health")

Check = Callable[[], Awaitable[str | None]]
"""A readiness check: returns None when ready, else one line saying what is wrong."""

CHECK_TIMEOUT_SECONDS = 3.0


def database_check(pool: asyncpg.Pool) -> Check:
    """Ready when a query on ``pool`` answers."""

    async def check() -> str | None:
        await pool.fetchval("SELECT 1")
        return None

    return check


def migrations_check(pool: asyncpg.Pool) -> Check:
    """Ready when no migration this code knows is pending."""

    async def check() -> str | None:
        async with pool.acquire() as conn:
            todo = await pending(conn)
        return f"pending migrations: {', '.join(m.name for m in todo)}" if todo else None

    return check


class HealthServer:
    """An aiohttp server for the three endpoints; start with :meth:`start`, end with :meth:`stop`.

    Args:
        pool: the engine's pool (built-in checks and database gauges), or None.
        host: interface to listen on.
        port: TCP port; 0 picks a free one (see :attr:`port` after :meth:`start`).
        kinds: registered kind names, so ``errand_jobs`` shows zeros for kinds with no jobs.
    """

    def __init__(
        self,
        pool: asyncpg.Pool | None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        kinds: Iterable[str] = (),
    ) -> None:
        self.pool = pool
        self.host = host
        self.port = port
        self.checks: dict[str, Check] = {}
        if pool is not None:
            self.checks["database"] = database_check(pool)
            self.checks["migrations"] = migrations_check(pool)
        self.collector = metrics.DatabaseCollector(kinds)
        self._exposition = make_aiohttp_handler(metrics.exposed(pool, self.collector))
        self._runner: web.AppRunner | None = None

    def add_check(self, name: str, check: Check) -> None:
        """Add (or replace) a readiness check, e.g. ``gateway`` for the Discord connection."""
        self.checks[name] = check

    async def readiness(self) -> dict[str, str]:
        """Run every check (each bounded in time); ``{name: "ok" | what is wrong}``."""

        async def run(check: Check) -> str:
            try:
                problem = await asyncio.wait_for(check(), CHECK_TIMEOUT_SECONDS)
            except TimeoutError:
                return f"timed out after {CHECK_TIMEOUT_SECONDS:g} s"
            except Exception as exc:  # a failing check is an answer, not a crash
                return scrub(f"{type(exc).__name__}: {exc}")[:300]
            return problem or "ok"

        names = list(self.checks)
        results = await asyncio.gather(*(run(self.checks[n]) for n in names))
        return dict(zip(names, results, strict=True))

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.json_response({"status": "alive"})

    async def _readyz(self, _: web.Request) -> web.Response:
        checks = await self.readiness()
        ready = all(v == "ok" for v in checks.values())
        body = {"status": "ready" if ready else "not ready", "checks": checks}
        return web.Response(
            status=200 if ready else 503,
            text=json.dumps(body),
            content_type="application/json",
        )

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        if self.pool is not None:
            await self.collector.refresh(self.pool)  # the gauges the handler then collects
        return await self._exposition(request)

    async def start(self) -> int:
        """Listen; returns the bound port."""
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        log.info("health.listening", host=self.host, port=self.port)
        return self.port

    async def stop(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
