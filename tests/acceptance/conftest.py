"""Fixtures for acceptance tests: the real ``errand`` CLI in subprocesses on a test database
(``cli_env`` and ``run_errand`` come from ``tests/conftest.py``)."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from tests.support.cli import CLI, ROOT, RunErrand

ErrandJson = Callable[..., Awaitable[dict[str, Any]]]
SpawnWorker = Callable[..., Awaitable[asyncio.subprocess.Process]]


@pytest.fixture
async def errand_json(run_errand: RunErrand) -> ErrandJson:
    """Run ``errand ARGS``, which must succeed, and return its JSON output."""

    async def run(*args: str) -> dict[str, Any]:
        ran = await run_errand(*args)
        assert ran.code == 0, ran.err
        result: dict[str, Any] = json.loads(ran.out)
        return result

    return run


@pytest.fixture
async def spawn_worker(cli_env: dict[str, str]) -> AsyncIterator[SpawnWorker]:
    """Start ``errand worker`` subprocesses (extra env as keywords); stopped with SIGTERM."""
    procs: list[asyncio.subprocess.Process] = []

    async def start(**extra: str) -> asyncio.subprocess.Process:
        proc = await asyncio.create_subprocess_exec(
            *CLI,
            "worker",
            env=cli_env | extra,
            cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 20)
