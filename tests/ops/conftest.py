"""Fixtures of the operations tests: ``errand`` subprocesses (workers with their health endpoint
on a free port, one-shot commands) on this test's database, and an HTTP GET."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import pytest

from tests.cli_support import CLI, ROOT, Ran, cli_environment, run_cli

if TYPE_CHECKING:
    from discord_emulator import Emulator


@dataclass
class WorkerProc:
    """A running ``errand worker`` and the port of its health endpoint."""

    proc: asyncio.subprocess.Process
    port: int
    log: Path


async def http_get(port: int, path: str) -> tuple[int, str]:
    """GET ``http://127.0.0.1:port/path``: status and body."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"http://127.0.0.1:{port}{path}", timeout=aiohttp.ClientTimeout(total=10)
        ) as response,
    ):
        return response.status, await response.text()


@pytest.fixture
def ops_env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    """Environment of every subprocess: this test's database, fast worker timings, JSON logs."""
    return cli_environment(db_dsn, tmp_path / "data")


@pytest.fixture
def errand(ops_env: dict[str, str]) -> Callable[..., Awaitable[Ran]]:
    """Run ``errand ARGS`` to the end; its exit code and output, whatever they are."""

    async def run(*args: str, **extra: str) -> Ran:
        return await run_cli(ops_env | extra, *args)

    return run


def _port_in_log(log: Path) -> int | None:
    for line in log.read_text().splitlines() if log.exists() else []:
        if '"health.listening"' in line:
            return int(json.loads(line)["port"])
    return None


async def _listening_port(log: Path, proc: asyncio.subprocess.Process, within: float) -> int:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if proc.returncode is not None:
            tail = await asyncio.to_thread(log.read_text)
            raise AssertionError(f"process exited {proc.returncode}: {tail[-2000:]}")
        port = await asyncio.to_thread(_port_in_log, log)
        if port is not None:
            return port
        await asyncio.sleep(0.05)
    raise AssertionError("process never listened")


@pytest.fixture
async def spawn(
    ops_env: dict[str, str], tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[WorkerProc]]]:
    """Start long-running ``errand COMMAND`` subprocesses (``worker``, ``bot``, ``run``,
    ``sandbox``) with the health endpoint on a free port; they get SIGTERM (and must exit) when
    the test ends."""
    started: list[WorkerProc] = []

    async def start(command: str = "worker", *args: str, **extra: str) -> WorkerProc:
        log = tmp_path / f"{command}-{len(started)}.log"
        with log.open("wb") as sink:
            proc = await asyncio.create_subprocess_exec(
                *CLI,
                command,
                *args,
                env=ops_env | {"ERRAND_HEALTH_PORT": "0"} | extra,
                cwd=ROOT,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=sink,
            )
        item = WorkerProc(proc, 0, log)
        started.append(item)
        item.port = await _listening_port(log, proc, 30)
        return item

    yield start
    for item in started:
        if item.proc.returncode is None:
            item.proc.send_signal(signal.SIGTERM)
    for item in started:
        await asyncio.wait_for(item.proc.wait(), 30)


@pytest.fixture
def spawn_worker(
    spawn: Callable[..., Awaitable[WorkerProc]],
) -> Callable[..., Awaitable[WorkerProc]]:
    """Start ``errand worker`` subprocesses (see :func:`spawn`)."""

    async def start(**extra: str) -> WorkerProc:
        return await spawn("worker", **extra)

    return start


def discord_env(emu: Emulator) -> dict[str, str]:
    """Environment of a bot process logged in to ``emu`` (fast delivery timings)."""
    assert emu.application is not None
    return {
        "DISCORD_TOKEN": emu.application.token,
        "ERRAND_DISCORD_API_BASE": emu.api_base,
        "ERRAND_DISCORD_GATEWAY_URL": emu.gateway_url,
        "ERRAND_BOT_DEFAULT_KIND": "demo",
        "ERRAND_BOT_EDIT_INTERVAL_SECONDS": "0.1",
        "ERRAND_BOT_DELIVERY_POLL_SECONDS": "0.2",
        "ERRAND_BOT_DELIVERY_LEASE_SECONDS": "1",
        "ERRAND_BOT_GUILD_READY_TIMEOUT": "0.05",
        "ERRAND_BOT_REQUESTS_PER_SECOND": "2000",
    }


async def until(predicate: Callable[[], Awaitable[bool]], within: float = 30.0) -> None:
    """Poll ``predicate`` until true; fail the test after ``within`` seconds."""
    end = time.monotonic() + within
    while not await predicate():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.1)
