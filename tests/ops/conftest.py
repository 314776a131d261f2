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

import aiohttp
import pytest

from tests.cli_support import CLI, ROOT, Ran, cli_environment, run_cli


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
            raise AssertionError(f"worker exited {proc.returncode}: {tail[-2000:]}")
        port = await asyncio.to_thread(_port_in_log, log)
        if port is not None:
            return port
        await asyncio.sleep(0.05)
    raise AssertionError("worker never listened")


@pytest.fixture
async def spawn_worker(
    ops_env: dict[str, str], tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[WorkerProc]]]:
    """Start ``errand worker`` subprocesses with the health endpoint on a free port; they get
    SIGTERM (and must exit) when the test ends."""
    started: list[WorkerProc] = []

    async def start(**extra: str) -> WorkerProc:
        log = tmp_path / f"worker-{len(started)}.log"
        with log.open("wb") as sink:
            proc = await asyncio.create_subprocess_exec(
                *CLI,
                "worker",
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


async def until(predicate: Callable[[], Awaitable[bool]], within: float = 30.0) -> None:
    """Poll ``predicate`` until true; fail the test after ``within`` seconds."""
    end = time.monotonic() + within
    while not await predicate():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.1)
