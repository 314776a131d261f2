"""Every long-running process heartbeats its row of the fleet (``errand_process``, the
dashboard's overview) while it runs, under the name its worker gives its attempts, and takes it
away when it stops."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable

import asyncpg

from jobs.engine.store import JobStore
from tests.support.cli import WorkerProc
from tests.support.polling import poll


async def test_a_worker_is_in_the_fleet_while_it_runs_and_leaves_when_stopped(
    pool: asyncpg.Pool, store: JobStore, spawn_worker: Callable[..., Awaitable[WorkerProc]]
) -> None:
    worker = await spawn_worker()
    rows = await poll(
        lambda: pool.fetch("SELECT name, roles, seen_at FROM errand_process"),
        20,
        what="the worker's row in errand_process",
    )
    [row] = rows
    assert row["roles"] == ["worker"]
    assert row["name"].split(":")[1] == str(worker.proc.pid)  # host:pid:random
    # Its attempts carry the same name.
    await store.submit("sleep", {"seconds": 30}, requester="r")
    await poll(
        lambda: pool.fetchval("SELECT count(*) FROM attempt WHERE worker = $1", row["name"]),
        20,
        what="an attempt under the fleet's name",
    )
    worker.proc.send_signal(signal.SIGTERM)
    assert await worker.proc.wait() == 0
    assert await pool.fetchval("SELECT count(*) FROM errand_process") == 0
