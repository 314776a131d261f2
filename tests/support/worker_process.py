"""``errand worker`` as a real subprocess with short leases, for tests that stop it with
SIGTERM or SIGKILL and start a fresh one (as a deploy or a crash would)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import BinaryIO

from tests.support.cli import ROOT

FAST = {
    "ERRAND_WORKER_HEARTBEAT_SECONDS": "0.2",
    "ERRAND_WORKER_LEASE_SECONDS": "2",
    "ERRAND_WORKER_POLL_SECONDS": "0.1",
    "ERRAND_WORKER_REAPER_SECONDS": "0.2",
    "ERRAND_WORKER_RETRY_BASE_SECONDS": "0",
    "ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS": "0.5",
}


async def start_worker(dsn: str, data_dir: Path, **env: str) -> asyncio.subprocess.Process:
    """Start ``errand worker`` on ``dsn`` (test kinds loaded); its stderr goes to a log file."""
    full = (
        {k: v for k, v in os.environ.items() if not k.startswith("ERRAND_WORKER_")}
        | {
            "DATABASE_URL": dsn,
            "PYTHONPATH": str(ROOT),
            "ERRAND_EXTRA_KINDS": "tests.support.kinds",
            "ERRAND_DATA_DIR": str(data_dir),
            "ERRAND_LOG_FORMAT": "json",
        }
        | FAST
        | env
    )
    log = _log_file(data_dir)
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "from bot.cli import main; main()",
            "worker",
            env=full,
            cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log,
        )
    finally:
        log.close()


def _log_file(data_dir: Path) -> BinaryIO:
    data_dir.mkdir(parents=True, exist_ok=True)
    return (data_dir / "worker.log").open("ab")


async def stop_worker(proc: asyncio.subprocess.Process, sig: int = signal.SIGTERM) -> int:
    """Send ``sig`` and wait (at most 20 s) for the process to exit; its exit code."""
    if proc.returncode is None:
        proc.send_signal(sig)
    return await asyncio.wait_for(proc.wait(), 20)
