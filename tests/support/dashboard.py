"""A real ``errand dashboard`` (and real ``errand worker`` processes) for tests that drive them
from plain sync code (the browser tests, the access tests): starting and stopping the
subprocesses, and the database work of a test's setup, run on an event loop of its own thread
so that it never meets Playwright's.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from jobs.engine.db import create_pool
from jobs.engine.store import JobStore
from jobs.kinds import default_registry
from tests.support.cli import CLI, ROOT
from tests.support.databases import create_database, drop_database
from tests.support.worker_process import FAST

T = TypeVar("T")
TOKEN = "a-test-token-0123456789"


def in_thread(make: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine ``make()`` to its end on a new event loop in a thread of its own."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = asyncio.run(make())  # type: ignore[arg-type]
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


class Database:
    """A fresh migrated database of its own on the test server, used from sync code."""

    def __init__(self, server_dsn: str, template: str) -> None:
        self.server_dsn = server_dsn
        self.name = f"errand_dash_{secrets.token_hex(5)}"
        self.dsn = in_thread(lambda: create_database(server_dsn, self.name, template))

    def drop(self) -> None:
        in_thread(lambda: drop_database(self.server_dsn, self.name))

    def store(self, work: Callable[[JobStore], Awaitable[T]]) -> T:
        """``work(store)`` on a store of this database (the test kinds registered)."""

        async def go() -> T:
            import tests.support.kinds  # noqa: F401  - registers the test kinds

            pool = await create_pool(self.dsn, min_size=1, max_size=4)
            try:
                return await work(JobStore(pool, default_registry()))
            finally:
                await pool.close()

        return in_thread(go)

    def fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        """The rows of ``sql`` as dicts."""

        async def go() -> list[dict[str, Any]]:
            pool = await create_pool(self.dsn, min_size=1, max_size=1)
            try:
                return [dict(r) for r in await pool.fetch(sql, *args)]
            finally:
                await pool.close()

        return in_thread(go)


def environment(dsn: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """An ``errand`` subprocess's environment on ``dsn``: test kinds, JSON logs, fast timings."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("ERRAND_")}
    return (
        base
        | {
            "DATABASE_URL": dsn,
            "PYTHONPATH": str(ROOT),
            "ERRAND_DATA_DIR": str(data_dir),
            "ERRAND_LOG_FORMAT": "json",
            "ERRAND_LOG_LEVEL": "info",
            "ERRAND_EXTRA_KINDS": "tests.support.kinds",
        }
        | extra
    )


class Running:
    """One ``errand`` subprocess, its log file, and (for a server) the port it listens on."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        with log.open("ab") as sink:
            self.process = subprocess.Popen(
                [*CLI, *args], env=env, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT
            )
        self.port: int | None = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, event: str, within: float = 60.0) -> dict[str, Any]:
        """The first JSON log line of ``event``; fails the test if the process ends first."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            for line in self.log().splitlines():
                if f'"{event}"' in line:
                    found: dict[str, Any] = json.loads(line)
                    return found
            if self.process.poll() is not None:
                raise AssertionError(
                    f"the process ended ({self.process.returncode}):\n{self.log()}"
                )
            time.sleep(0.05)
        raise AssertionError(f"no {event} within {within}s:\n{self.log()}")

    def stop(self, sig: int = signal.SIGTERM, within: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(within)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"did not stop within {within}s:\n{self.log()}") from None


def start_dashboard(dsn: str, data_dir: Path, **extra: str) -> Running:
    """``errand dashboard`` on a free port with the token login (unless ``extra`` says else)."""
    env = environment(
        dsn,
        data_dir,
        ERRAND_DASHBOARD_TOKEN=TOKEN,
        ERRAND_DASHBOARD_PORT="0",
    )
    env.update(extra)
    env = {k: v for k, v in env.items() if v}  # "" unsets a variable
    data_dir.mkdir(parents=True, exist_ok=True)
    running = Running(["dashboard"], env, data_dir / "dashboard.log")
    running.port = int(running.wait_for("dashboard.listening")["port"])
    return running


def start_worker(dsn: str, data_dir: Path, name: str, **extra: str) -> Running:
    """``errand worker`` with short leases, its jobs' cancels waiting ``extra``'s grace."""
    data_dir.mkdir(parents=True, exist_ok=True)
    env = environment(dsn, data_dir, **(FAST | extra))
    running = Running(["worker"], env, data_dir / f"{name}.log")
    running.wait_for("worker.started")
    return running
