"""Every long-running process serves /healthz, /readyz and /metrics: real ``errand bot``,
``errand run`` and ``errand worker`` subprocesses, scraped over HTTP while their database is cut
off and while the emulator's gateway is down, and again after each comes back."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import aiohttp
import asyncpg
import pytest

from discord_emulator import Emulator
from discord_emulator.testing import World
from jobs.ops import metrics
from tests.support.cli import WorkerProc, discord_env
from tests.support.http import http_get
from tests.support.polling import poll
from tests.support.relay import Relay

CHECKS = {
    "bot": {"database", "migrations", "gateway"},
    "run": {"database", "migrations", "gateway", "worker"},
    "worker": {"database", "migrations", "worker"},
}


async def _readiness(proc: WorkerProc) -> tuple[int, dict[str, str]]:
    status, body = await http_get(proc.port, "/readyz")
    return status, json.loads(body)["checks"]


@pytest.mark.parametrize("command", ["bot", "run", "worker"])
async def test_readyz_is_503_while_the_database_or_the_gateway_is_down_and_200_after(
    command: str,
    emu: Emulator,
    world: World,
    relay: Relay,
    spawn_errand: Callable[..., Awaitable[WorkerProc]],
) -> None:
    """Ready (200, every check ok) once connected; 503 naming the database while the network
    to it is cut (connections dropped and refused); 503 naming the gateway while the emulator is
    down (bot and run); 200 again after each recovers. /healthz stays 200 throughout."""
    proc = await spawn_errand(command, **discord_env(emu), DATABASE_URL=relay.dsn)
    wanted = CHECKS[command]

    async def ready() -> bool:
        status, checks = await _readiness(proc)
        return status == 200 and set(checks) == wanted and set(checks.values()) == {"ok"}

    await poll(ready, within=30)

    await relay.cut()
    try:

        async def database_down() -> bool:
            status, checks = await _readiness(proc)
            return status == 503 and checks["database"] != "ok"

        await poll(database_down, within=30)
        assert (await http_get(proc.port, "/healthz"))[0] == 200
        scraped = metrics.samples((await http_get(proc.port, "/metrics"))[1])
        assert scraped["errand_database_up"] == 0.0
    finally:
        await relay.restore()
    await poll(ready, within=30)

    if command == "worker":
        return
    await emu.stop()
    try:

        async def gateway_down() -> bool:
            status, checks = await _readiness(proc)
            return status == 503 and checks["gateway"] != "ok" and checks["database"] == "ok"

        await poll(gateway_down, within=30)
        _, checks = await _readiness(proc)
        assert "disconnected" in checks["gateway"]
        assert (await http_get(proc.port, "/healthz"))[0] == 200
    finally:
        await emu.start()
    await poll(ready, within=60)  # discord.py reconnects with a growing backoff


async def test_metrics_follow_the_scrapers_accept_header(
    spawn_errand: Callable[..., Awaitable[WorkerProc]], pool: asyncpg.Pool
) -> None:
    """/metrics is prometheus-client's own exposition: Prometheus text by default, OpenMetrics
    (ending in ``# EOF``) when the scraper asks for it; both carry the database gauges."""
    proc = await spawn_errand("worker")
    url = f"http://127.0.0.1:{proc.port}/metrics"
    async with aiohttp.ClientSession() as session:
        async with session.get(url) as plain:
            plain_type, plain_text = plain.headers["Content-Type"], await plain.text()
        async with session.get(
            url, headers={"Accept": "application/openmetrics-text; version=1.0.0"}
        ) as open_metrics:
            om_type, om_text = open_metrics.headers["Content-Type"], await open_metrics.text()
    assert plain_type.startswith("text/plain; version=0.0.4")
    assert metrics.samples(plain_text)["errand_database_up"] == 1.0
    assert om_type.startswith("application/openmetrics-text; version=1.0.0")
    assert om_text.rstrip().endswith("# EOF")
    assert "errand_database_up 1.0" in om_text
