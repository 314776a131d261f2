"""Running the real ``errand`` CLI in subprocesses against a test's database: the repository
root, the command line, the environment (database, fast timings, the emulator as Discord) and a
finished or still running process."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from discord_emulator import Emulator

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from bot.cli import main; main()"]


@dataclass
class Ran:
    """A finished CLI run."""

    code: int
    out: str
    err: str


# The ``run_errand`` fixture: ``await run_errand(*args, **extra_env)``.
RunErrand = Callable[..., Awaitable[Ran]]


def cli_environment(db_dsn: str, data_dir: Path) -> dict[str, str]:
    """Environment of an ``errand`` subprocess: this test's database, fast worker timings."""
    return os.environ | {
        "DATABASE_URL": db_dsn,
        "PYTHONPATH": str(ROOT),
        "ERRAND_DATA_DIR": str(data_dir),
        "ERRAND_LOG_FORMAT": "json",
        "ERRAND_WORKER_HEARTBEAT_SECONDS": "0.5",
        "ERRAND_WORKER_POLL_SECONDS": "0.2",
    }


async def run_cli(env: dict[str, str], *args: str, within: float = 60.0) -> Ran:
    """Run ``errand ARGS`` to the end: its exit code and output, whatever they are."""
    proc = await asyncio.create_subprocess_exec(
        *CLI,
        *args,
        env=env,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), within)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode())


@dataclass
class WorkerProc:
    """A running ``errand`` process (``worker``, ``bot``, ``run``, ``sandbox``) and the port of its
    health endpoint."""

    proc: asyncio.subprocess.Process
    port: int
    log: Path


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
        # A delivery still rate limited after discord.py's retries comes back this soon (5 s).
        "ERRAND_BOT_DELIVERY_RATE_LIMITED_SECONDS": "0.2",
        "ERRAND_BOT_GUILD_READY_TIMEOUT": "0.05",
        "ERRAND_BOT_REQUESTS_PER_SECOND": "2000",
    }
