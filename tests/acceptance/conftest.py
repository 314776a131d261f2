"""Fixtures for acceptance tests: the real ``errand`` CLI in subprocesses on a test database."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from bot.cli import main; main()"]

Errand = Callable[..., Awaitable[dict[str, Any]]]


@dataclass
class Ran:
    """A finished CLI run."""

    code: int
    out: str
    err: str


@pytest.fixture
async def env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    return os.environ | {
        "DATABASE_URL": db_dsn,
        "PYTHONPATH": str(ROOT),
        "ERRAND_DATA_DIR": str(tmp_path / "data"),
        "ERRAND_LOG_FORMAT": "json",
        "ERRAND_WORKER_HEARTBEAT_SECONDS": "0.5",
        "ERRAND_WORKER_POLL_SECONDS": "0.2",
    }


@pytest.fixture
async def errand(env: dict[str, str]) -> Errand:
    async def run(*args: str) -> dict[str, Any]:
        proc = await asyncio.create_subprocess_exec(
            *CLI, *args, env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        result: dict[str, Any] = json.loads(out)
        return result

    return run


@pytest.fixture
async def worker(
    env: dict[str, str],
) -> AsyncIterator[Callable[..., Awaitable[asyncio.subprocess.Process]]]:
    """Start ``errand worker`` subprocesses (extra env as keywords); stopped with SIGTERM."""
    procs: list[asyncio.subprocess.Process] = []

    async def start(**extra: str) -> asyncio.subprocess.Process:
        proc = await asyncio.create_subprocess_exec(
            *CLI, "worker", env=env | extra, cwd=ROOT, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 20)


@pytest.fixture
async def errand_raw(env: dict[str, str]) -> Callable[..., Awaitable[Ran]]:
    """Run ``errand ARGS`` and return its exit code and output, whatever they are."""

    async def run(*args: str) -> Ran:
        proc = await asyncio.create_subprocess_exec(
            *CLI, *args, env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        assert proc.returncode is not None
        return Ran(proc.returncode, out.decode(), err.decode())

    return run
