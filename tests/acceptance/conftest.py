"""Fixtures for acceptance tests: the real ``errand`` CLI in subprocesses on a test database."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CLI, ROOT, Ran, cli_environment, run_cli

Errand = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
async def env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    return cli_environment(db_dsn, tmp_path / "data")


@pytest.fixture
async def errand(env: dict[str, str]) -> Errand:
    async def run(*args: str) -> dict[str, Any]:
        ran = await run_cli(env, *args)
        assert ran.code == 0, ran.err
        result: dict[str, Any] = json.loads(ran.out)
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
            *CLI,
            "worker",
            env=env | extra,
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


@pytest.fixture
async def errand_raw(env: dict[str, str]) -> Callable[..., Awaitable[Ran]]:
    """Run ``errand ARGS`` and return its exit code and output, whatever they are."""

    async def run(*args: str) -> Ran:
        return await run_cli(env, *args)

    return run
