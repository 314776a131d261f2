"""Running the real ``errand`` CLI in subprocesses against a test's database."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from bot.cli import main; main()"]


@dataclass
class Ran:
    """A finished CLI run."""

    code: int
    out: str
    err: str


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
