"""Fixtures of the operations tests: ``errand`` subprocesses (workers with their health endpoint
on a free port, one-shot commands) on this test's database, and a cuttable relay to it."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tests.support.cli import CLI, ROOT, WorkerProc
from tests.support.polling import poll
from tests.support.relay import Relay


@pytest.fixture
async def relay(db_dsn: str) -> AsyncIterator[Relay]:
    """A cuttable TCP relay to this test's database (see :class:`Relay`)."""
    link = Relay(db_dsn)
    await link.restore()
    yield link
    await link.close()


def _port_in_log(log: Path) -> int | None:
    for line in log.read_text().splitlines() if log.exists() else []:
        if '"health.listening"' in line:
            return int(json.loads(line)["port"])
    return None


async def _listening_port(log: Path, proc: asyncio.subprocess.Process, within: float) -> int:
    async def port() -> int | None:
        if proc.returncode is not None:
            tail = await asyncio.to_thread(log.read_text)
            raise AssertionError(f"process exited {proc.returncode}: {tail[-2000:]}")
        return await asyncio.to_thread(_port_in_log, log)

    return await poll(port, within, what=f"health.listening in {log.name}")


@pytest.fixture
async def spawn_errand(
    cli_env: dict[str, str], tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[WorkerProc]]]:
    """Start long-running ``errand COMMAND`` subprocesses (``worker``, ``bot``, ``run``,
    ``sandbox``) with the health endpoint on a free port; they get SIGTERM (and must exit) when
    the test ends. Request it after ``emu``: fixtures end in reverse order, so the processes
    stop before the emulator does (a bot reconnecting into a stopping emulator leaves it a
    half-accepted socket)."""
    started: list[WorkerProc] = []

    async def start(command: str = "worker", *args: str, **extra: str) -> WorkerProc:
        log = tmp_path / f"{command}-{len(started)}.log"
        with log.open("wb") as sink:
            proc = await asyncio.create_subprocess_exec(
                *CLI,
                command,
                *args,
                env=cli_env | {"ERRAND_HEALTH_PORT": "0"} | extra,
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
    spawn_errand: Callable[..., Awaitable[WorkerProc]],
) -> Callable[..., Awaitable[WorkerProc]]:
    """Start ``errand worker`` subprocesses (see :func:`spawn_errand`)."""

    async def start(**extra: str) -> WorkerProc:
        return await spawn_errand("worker", **extra)

    return start
