"""What the benchmarks share to run Errand as its users do: its modules compiled as an install's
are, the environment of an ``errand worker`` process and the process itself (its handlers
report lines on its stdout, bench/probe.py), figures kept per run, and a server left quiet
between measurements. Used by ``bench.bench_engine`` and ``bench.waiting``."""

from __future__ import annotations

import asyncio
import compileall
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
ERRAND_WORKER = [sys.executable, "-c", "from bot.cli import main; main()", "worker"]


def compile_errand() -> None:
    """Compile Errand's modules (and the bench's kinds) to bytecode, as ``pip install`` does for an
    installed package, so the processes measured start as installed ones do. A checkout used in
    place is otherwise recompiled from source at every start when ``PYTHONDONTWRITEBYTECODE`` is
    set (as on the machines these figures come from): about 35 ms of every ``errand job status``,
    which no installed Errand pays. pgqueuer, installed, has its bytecode already."""
    for package in ("jobs", "bot", "bench"):
        compileall.compile_dir(ROOT / package, quiet=1)


def errand_env(dsn: str) -> dict[str, str]:
    """The environment of an Errand process: the database and the bench kinds, nothing else."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ERRAND_")}
    return env | {
        "DATABASE_URL": dsn,
        "ERRAND_EXTRA_KINDS": "bench.kinds",
        "PYTHONPATH": str(ROOT),
    }


class WorkerProcess:
    """A worker subprocess whose handlers report lines (``EVENT ID T``) on its stdout."""

    def __init__(self, proc: asyncio.subprocess.Process, spawned: float) -> None:
        self.proc = proc
        self.spawned = spawned
        self.lines: asyncio.Queue[tuple[str, str, float]] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, argv: list[str], env: dict[str, str], log: Path) -> WorkerProcess:
        spawned = time.monotonic()
        with log.open("ab") as err:
            proc = await asyncio.create_subprocess_exec(
                *argv, env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=err
            )
        return cls(proc, spawned)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            parts = line.decode().split()
            if len(parts) == 3:
                self.lines.put_nowait((parts[0], parts[1], float(parts[2])))

    async def expect(self, event: str, job_id: str | None = None, within: float = 60) -> float:
        """The time of the next line ``event`` (of ``job_id``), skipping others."""
        end = time.monotonic() + within
        while True:
            got, jid, at = await asyncio.wait_for(self.lines.get(), end - time.monotonic())
            if got == event and (job_id is None or jid == job_id):
                return at

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 20)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        self._reader.cancel()


@dataclass
class Figures:
    """Every sample of one system, by measurement."""

    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, value: float) -> None:
        self.values.setdefault(key, []).append(value)


async def quiet(server: str, within: float = 120) -> None:
    """Wait until no autovacuum worker runs on the server (the measurement before this one
    left tables for it to vacuum and analyze); each measurement then starts on an idle server
    instead of sharing the two cores with a vacuum it did not cause."""
    conn = await asyncpg.connect(server)
    try:
        end = time.monotonic() + within
        while time.monotonic() < end and await conn.fetchval(  # noqa: ASYNC110 - the server
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'"
        ):
            await asyncio.sleep(0.2)
    finally:
        await conn.close()


async def errand_poller(dsn: str) -> asyncpg.Connection:
    """A connection of the harness's own for :func:`errand_pending`, planned to probe the
    partial indexes: with sequential scans allowed, the planner answered "is a job still
    queued?" by reading the table from its start once its statistics had seen queued jobs, past
    every job already done or waiting: work charged to the measured system, every 5 ms, for the
    harness's sake."""
    return await asyncpg.connect(dsn, server_settings={"enable_seqscan": "off"})


async def errand_pending(poller: asyncpg.Connection) -> bool:
    """Whether an Errand job is still queued or running: two probes of the partial indexes
    (job_lane, job_live)."""
    return bool(
        await poller.fetchval(
            "SELECT EXISTS (SELECT 1 FROM job WHERE state = 'queued')"
            " OR EXISTS (SELECT 1 FROM job WHERE state = 'running')"
        )
    )
