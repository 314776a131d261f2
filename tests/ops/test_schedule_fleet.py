"""Schedules tick in every process: a schedule every second, with 3 ``errand worker`` and 2
``errand bot`` processes ticking it for 20 s and one worker SIGKILLed midway, makes exactly one
job for each second."""

from __future__ import annotations

import asyncio
import itertools
import signal
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING

import asyncpg
import pytest

from tests.support.cli import RunErrand, WorkerProc, discord_env

if TYPE_CHECKING:
    from discord_emulator import Emulator

FAST = {
    "ERRAND_WORKER_HEARTBEAT_SECONDS": "0.2",
    "ERRAND_WORKER_LEASE_SECONDS": "2",
    "ERRAND_WORKER_REAPER_SECONDS": "0.2",
}


@pytest.mark.slow
async def test_a_schedule_every_second_ticks_once_per_second_across_five_processes(
    emu: Emulator,
    spawn_errand: Callable[..., Awaitable[WorkerProc]],
    run_errand: RunErrand,
    pool: asyncpg.Pool,
) -> None:
    ran = await run_errand("schedule", "add", "beat", "noop", "--cron", "* * * * * *")
    assert ran.code == 0, ran.err
    procs = [await spawn_errand("worker", **FAST) for _ in range(3)]
    for shard in (0, 1):
        await spawn_errand(
            "bot", "--shard-ids", str(shard), "--shard-count", "2", **discord_env(emu)
        )
    await asyncio.sleep(8)
    procs[0].proc.send_signal(signal.SIGKILL)
    await procs[0].proc.wait()
    await asyncio.sleep(12)
    rows = await pool.fetch(
        "SELECT run_at, idempotency_key FROM job WHERE requester = 'schedule:beat' ORDER BY run_at"
    )
    ticks = [r["run_at"] for r in rows]
    assert len(ticks) >= 18, len(ticks)
    # One job per tick: no key twice (the unique index), and no second skipped between the
    # first tick and the last.
    assert len({r["idempotency_key"] for r in rows}) == len(rows)
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert set(gaps) == {timedelta(seconds=1)}, gaps
    late = await pool.fetchval(
        "SELECT max(created_at - run_at) FROM job WHERE requester = 'schedule:beat'"
    )
    assert late < timedelta(seconds=2), late  # each made within a round or two of its tick
