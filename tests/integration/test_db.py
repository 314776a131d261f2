"""The embedded PostgreSQL: a crashed previous run or a stale lock never blocks the next start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.engine.db import stop_embedded

ROOT = Path(__file__).resolve().parents[2]

# Starts (or joins) the embedded server in argv[1], writes a row, prints the count, and leaves
# the server running (cleanup_mode is "stop" at exit, but we os._exit to simulate a crash).
SCRIPT = """
import asyncio, os, sys
from pathlib import Path
from jobs.engine.db import embedded_dsn, connect
async def main():
    dsn = embedded_dsn(Path(sys.argv[1]))
    conn = await connect(dsn)
    await conn.execute("CREATE TABLE IF NOT EXISTS t (x int)")
    await conn.execute("INSERT INTO t VALUES (1)")
    print(await conn.fetchval("SELECT count(*) FROM t"), flush=True)
    await conn.close()
asyncio.run(main())
os._exit(0) if sys.argv[2] == "crash" else None
"""


def run(data: Path, mode: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(data), mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]  # the count; warnings may precede it


@pytest.fixture
def data(data_root: Path) -> Path:
    return data_root / "pgdata"


def postmaster_pid(data: Path) -> int:
    return int((data / "postmaster.pid").read_text().splitlines()[0])


@pytest.mark.slow
def test_next_start_works_after_the_server_was_killed(data: Path) -> None:
    """SIGKILL the postmaster (a crash: stale postmaster.pid left behind); the next start
    recovers and the data written before the crash is still there."""
    assert run(data, "crash") == "1"
    pid = postmaster_pid(data)
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    assert (data / "postmaster.pid").exists()
    assert run(data, "stop") == "2"


@pytest.mark.slow
def test_a_stale_pid_file_naming_another_live_process_does_not_block_start(data: Path) -> None:
    """A postmaster.pid whose PID now belongs to an unrelated live process is removed."""
    assert run(data, "stop") == "1"
    stop_embedded(data)  # normally stopped at exit already; make sure before faking the file
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (data / "postmaster.pid").write_text(f"{sleeper.pid}\n{data}\n")
        assert run(data, "stop") == "2"
    finally:
        sleeper.kill()
        sleeper.wait()
