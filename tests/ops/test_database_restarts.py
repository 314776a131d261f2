"""PostgreSQL restarts under real ``errand worker`` processes: jobs ride them out, workers stay up.

The database is an embedded PostgreSQL of this test alone (restarting the shared one would stop
every other test's database). It is restarted both ways an operator or a crash does it: a fast
shutdown then start, and SIGKILL of the postmaster then start.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from jobs.engine.db import create_pool
from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.fakes.chat_server import chat_server
from tests.support.cli import CLI, ROOT, cli_environment
from tests.support.pg_restart import own_database, restart
from tests.support.polling import poll


class Fleet:
    """Worker processes on the test's own PostgreSQL."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.procs: list[asyncio.subprocess.Process] = []

    async def spawn(self) -> asyncio.subprocess.Process:
        log = self.logs / f"worker-{len(self.procs)}.log"
        with log.open("wb") as sink:
            proc = await asyncio.create_subprocess_exec(
                *CLI, "worker", env=self.env, cwd=ROOT, stdout=sink, stderr=sink
            )
        self.procs.append(proc)

        async def started() -> bool:
            assert proc.returncode is None, log.read_text()[-3000:]
            return '"worker.started"' in log.read_text()

        await poll(started, within=30)
        return proc

    def tails(self) -> str:
        return "\n".join(p.read_text()[-3000:] for p in sorted(self.logs.glob("worker-*.log")))


@pytest.fixture
async def own_db(data_root: Path) -> tuple[Path, str]:
    """An embedded PostgreSQL of this test alone, migrated (stopped by ``data_root``)."""
    return await own_database(data_root)


async def _states(dsn: str) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT public_id, kind, state, reason, attempts FROM job")
    finally:
        await conn.close()
    return {r["public_id"]: dict(r) for r in rows}


async def _until_settled(dsn: str, within: float) -> dict[str, Any]:
    end = time.monotonic() + within
    while True:
        try:
            jobs = await _states(dsn)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            jobs = {}
        if jobs and all(
            j["state"] in {"succeeded", "failed", "cancelled", "unknown"} for j in jobs.values()
        ):
            return jobs
        if time.monotonic() > end:
            return jobs
        await asyncio.sleep(0.3)


AGENT_STEPS = [
    {"tool_calls": [{"name": "hello", "arguments": {}}], "delay": 1.0},
    {"tool_calls": [{"name": "date", "arguments": {}}], "delay": 1.0},
    {"tool_calls": [{"name": "hello", "arguments": {}}], "delay": 1.0},
    {"tool_calls": [{"name": "date", "arguments": {}}], "delay": 1.0},
    {"tool_calls": [{"name": "hello", "arguments": {}}], "delay": 1.0},
    {"tool_calls": [{"name": "date", "arguments": {}}], "delay": 1.0},
    {"content": "done", "delay": 0.2},
]


async def test_six_postgres_restarts_under_two_workers_cost_no_job_and_no_worker(
    own_db: tuple[Path, str], registry: Registry, tmp_path: Path
) -> None:
    """Six restarts of PostgreSQL (fast shutdown and SIGKILL, alternating) while multi-step
    ``agent`` jobs (one attempt allowed) and ``demo`` jobs run on two worker processes: every
    job succeeds (each with one attempt) and neither worker exits."""
    pgdata, dsn = own_db
    pool = await create_pool(dsn, max_size=2)
    store = JobStore(pool, registry)
    async with chat_server({"steps": AGENT_STEPS}) as server:
        env = cli_environment(dsn, tmp_path / "data") | {
            "ERRAND_AGENT_BASE_URL": server.url,
            "ERRAND_AGENT_API_KEY": "sk-test-outage-key",
            "ERRAND_WORKER_REAPER_SECONDS": "0.5",
        }
        fleet = Fleet(env, tmp_path)
        try:
            jobs = []
            for _ in range(4):
                job, _ = await store.submit(
                    "agent", {"prompt": "[script:steps] work"}, requester="t"
                )
                jobs.append(job.public_id)
                job, _ = await store.submit(
                    "demo", {"steps": 25, "step_seconds": 0.4}, requester="t"
                )
                jobs.append(job.public_id)
            await pool.close()
            for _ in range(2):
                await fleet.spawn()
            downtimes = []
            for cycle in range(6):
                await asyncio.sleep(0.8)
                downtimes.append(await restart(pgdata, kill=cycle % 2 == 1))
                for proc in fleet.procs:
                    assert proc.returncode is None, fleet.tails()
            settled = await _until_settled(dsn, within=60)
            for proc in fleet.procs:
                assert proc.returncode is None, fleet.tails()
        finally:
            for proc in fleet.procs:
                if proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in fleet.procs:
                await asyncio.wait_for(proc.wait(), 30)
            if not pool._closed:  # type: ignore[attr-defined]
                await pool.close()
    print("downtimes", [round(d, 2) for d in downtimes])
    outcomes = {
        j: (settled[j]["state"], settled[j]["reason"], settled[j]["attempts"]) for j in jobs
    }
    assert all(o == ("succeeded", None, 1) for o in outcomes.values()), (
        json.dumps(outcomes) + fleet.tails()
    )
    # Every worker process exited because it was told to, not because a loop died.
    assert [p.returncode for p in fleet.procs] == [0, 0]
