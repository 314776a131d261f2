"""Shared fixtures: a real PostgreSQL for every test that needs one.

The server is ``TEST_DATABASE_URL`` or ``DATABASE_URL`` when set, else an embedded PostgreSQL
started once per test session in a temporary directory. Migrations run once into a template
database; each test gets its own clone (``CREATE DATABASE ... TEMPLATE``, a few milliseconds), so
tests are isolated and LISTEN/NOTIFY works as in production.

A fixture name means one thing in every folder:

- ``cli_env``, ``run_errand`` (here): an ``errand`` subprocess's environment; running
  ``errand ARGS`` to the end, whatever its exit code. ``errand_json`` (acceptance): the same,
  which must succeed, its JSON output.
- ``spawn_worker``: a starter of ``errand worker`` subprocesses, stopped when the test ends;
  ``spawn_errand`` (ops): the same for any long-running ``errand`` command.
- ``worker``: a :class:`jobs.runtime.worker.Worker` running in the test's event loop (e2e).
- ``errand``: the parts of a running Errand, bot, worker, store and emulator (e2e); ``bot``:
  Errand's bot connected to the emulator (e2e); ``plain_bot``: a plain discord.py bot, not
  Errand's, for the emulator's own tests.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg
import pytest

from jobs.engine.db import create_pool, embedded_dsn, stop_embedded
from jobs.engine.migrate import migrate
from jobs.engine.store import JobStore
from jobs.kinds import default_registry
from jobs.runtime.registry import Registry
from tests.support.cli import Ran, RunErrand, cli_environment, run_cli
from tests.support.databases import create_database, drop_database

if TYPE_CHECKING:
    from discord_emulator import Emulator
    from discord_emulator.testing import World

# The suite runs in parallel (pytest-xdist): each worker process has its own session, so its own
# embedded server, and on a shared server (TEST_DATABASE_URL) its own template database, since
# CREATE DATABASE ... TEMPLATE fails while anyone else is connected to the template.
TEMPLATE = f"errand_test_template_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto``: one per CPU this process may use, at most 4.

    Most of the suite waits on subprocesses, servers and timeouts, so two workers on two cores
    halve its time (measured: 593 s serial, about 300 s with two). More than four is untested:
    the timing-sensitive tests were written for a machine that is not oversubscribed.
    """
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(usable or 1, 4))  # sched_getaffinity is Linux-only (not on macOS)


@pytest.fixture(scope="session")
def server_dsn() -> Iterator[str]:
    """DSN of the PostgreSQL server the tests use (its maintenance database)."""
    url = os.environ.get("TEST_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if url:
        yield url
        return
    with tempfile.TemporaryDirectory(prefix="errand-pg-") as tmp:
        yield embedded_dsn(Path(tmp) / "pgdata")
        stop_embedded(Path(tmp) / "pgdata")  # before its directory goes


@pytest.fixture
def data_root() -> Iterator[Path]:
    """A scratch directory for an embedded PostgreSQL's data, outside pytest's ``tmp_path``.

    pytest resets ``/tmp/pytest-of-<user>`` to mode 0700 whenever a session starts; as root the
    embedded server runs as its own system user, which then could not reach its data directory.
    """
    root = Path(tempfile.mkdtemp(prefix="errand-test-"))
    root.chmod(0o755)
    yield root
    for pgdata in root.rglob("postmaster.pid"):
        stop_embedded(pgdata.parent)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def template_db(server_dsn: str) -> str:
    """Name of a database with every migration applied, used as a clone template."""
    import asyncio

    async def build() -> None:
        conn = await asyncpg.connect(await create_database(server_dsn, TEMPLATE))
        try:
            await migrate(conn)
        finally:
            await conn.close()

    asyncio.run(build())
    return TEMPLATE


@pytest.fixture
async def db_dsn(server_dsn: str, template_db: str) -> AsyncIterator[str]:
    """DSN of a fresh, migrated database for this test alone."""
    name = f"errand_test_{secrets.token_hex(6)}"
    yield await create_database(server_dsn, name, template_db)
    await drop_database(server_dsn, name)


@pytest.fixture
async def pool(db_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    """A pool on this test's database."""
    p = await create_pool(db_dsn, min_size=1, max_size=10)
    yield p
    await p.close()


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    """A local Discord with Discord's rules (time windows shortened) and an application."""
    from discord_emulator import Emulator
    from discord_emulator.testing import fast_config

    async with Emulator(fast_config()) as emulator:
        emulator.create_application("Errand")
        yield emulator


@pytest.fixture
def world(emu: Emulator) -> World:
    """A guild with a text channel and a user (alice) in the emulator."""
    from discord_emulator.testing import make_world

    return make_world(emu)


@pytest.fixture
def cli_env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    """Environment of an ``errand`` subprocess: this test's database, fast worker timings, JSON
    logs."""
    return cli_environment(db_dsn, tmp_path / "data")


@pytest.fixture
def run_errand(cli_env: dict[str, str]) -> RunErrand:
    """Run ``errand ARGS`` (extra environment as keywords) to the end: its exit code and output,
    whatever they are."""

    async def run(*args: str, **extra: str) -> Ran:
        return await run_cli(cli_env | extra, *args)

    return run


@pytest.fixture
def registry() -> Registry:
    """The registry with the built-in kinds."""
    return default_registry()


@pytest.fixture
def store(pool: asyncpg.Pool, registry: Registry) -> JobStore:
    """A job store on this test's database."""
    return JobStore(pool, registry)
