"""Fixtures of the operations tests: ``errand`` subprocesses (workers with their health endpoint
on a free port, one-shot commands) on this test's database, and an HTTP GET."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit, urlunsplit

import pytest

from discord_emulator.server import stop_accepting
from tests.cli_support import CLI, ROOT, Ran, cli_environment, run_cli

if TYPE_CHECKING:
    from discord_emulator import Emulator


@dataclass
class WorkerProc:
    """A running ``errand worker`` and the port of its health endpoint."""

    proc: asyncio.subprocess.Process
    port: int
    log: Path


async def http_get(port: int, path: str) -> tuple[int, str]:
    """GET ``http://127.0.0.1:port/path``: status and body.

    Plain urllib in a thread: every connection is closed before this returns, so polling a
    process many times never leaves a socket for the garbage collector to warn about.
    """

    def get() -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as refused:
            with refused:
                return refused.code, refused.read().decode()

    return await asyncio.to_thread(get)


class Relay:
    """A TCP front for the test's PostgreSQL that the test can cut, like a network outage.

    Processes given :attr:`dsn` reach the database over TCP through this relay (also what a
    container needs: the tests' embedded server listens on a Unix socket only). :meth:`cut`
    closes the listening socket and aborts every relayed connection, so new connections are
    refused; :meth:`restore` listens again on the same port.
    """

    def __init__(self, dsn: str) -> None:
        self.parts = urlsplit(dsn)
        socket_dir = parse_qs(self.parts.query).get("host", [""])[0]
        self.unix_path = (
            f"{socket_dir}/.s.PGSQL.{self.parts.port or 5432}" if socket_dir.startswith("/") else ""
        )
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def dsn(self) -> str:
        user = self.parts.username or "postgres"
        return urlunsplit(("postgresql", f"{user}@127.0.0.1:{self.port}", self.parts.path, "", ""))

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.unix_path:
            return await asyncio.open_unix_connection(self.unix_path)
        return await asyncio.open_connection(self.parts.hostname, self.parts.port or 5432)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        # Registered before anything is awaited, so a cut (or the fixture's close) in any phase
        # of this connection aborts it rather than leaving it to the garbage collector.
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(client_w)
        server_w: asyncio.StreamWriter | None = None
        try:
            if self._server is None:  # accepted just before a cut: drop it like the rest
                client_w.transport.abort()
                return
            server_r, server_w = await self._open()
            self._writers.add(server_w)
            await asyncio.gather(self._pump(client_r, server_w), self._pump(server_r, client_w))
        except OSError:
            client_w.transport.abort()
        finally:
            self._writers -= {client_w, server_w} if server_w else {client_w}
            self._tasks.discard(task)

    async def restore(self) -> None:
        """Listen (again, on the same port once it has one)."""
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Refuse new connections and drop every open one."""
        assert self._server is not None
        await stop_accepting(self._server)
        server, self._server = self._server, None
        server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        await server.wait_closed()

    async def close(self) -> None:
        """Cut if listening, then wait for every relayed connection to be torn down (their
        sockets closed before the test's event loop ends)."""
        if self._server is not None:
            await self.cut()
        for writer in list(self._writers):
            writer.transport.abort()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@pytest.fixture
async def relay(db_dsn: str) -> AsyncIterator[Relay]:
    """A cuttable TCP relay to this test's database (see :class:`Relay`)."""
    link = Relay(db_dsn)
    await link.restore()
    yield link
    await link.close()


@pytest.fixture
def ops_env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    """Environment of every subprocess: this test's database, fast worker timings, JSON logs."""
    return cli_environment(db_dsn, tmp_path / "data")


@pytest.fixture
def errand(ops_env: dict[str, str]) -> Callable[..., Awaitable[Ran]]:
    """Run ``errand ARGS`` to the end; its exit code and output, whatever they are."""

    async def run(*args: str, **extra: str) -> Ran:
        return await run_cli(ops_env | extra, *args)

    return run


def _port_in_log(log: Path) -> int | None:
    for line in log.read_text().splitlines() if log.exists() else []:
        if '"health.listening"' in line:
            return int(json.loads(line)["port"])
    return None


async def _listening_port(log: Path, proc: asyncio.subprocess.Process, within: float) -> int:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if proc.returncode is not None:
            tail = await asyncio.to_thread(log.read_text)
            raise AssertionError(f"process exited {proc.returncode}: {tail[-2000:]}")
        port = await asyncio.to_thread(_port_in_log, log)
        if port is not None:
            return port
        await asyncio.sleep(0.05)
    raise AssertionError("process never listened")


@pytest.fixture
async def spawn(
    ops_env: dict[str, str], tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[WorkerProc]]]:
    """Start long-running ``errand COMMAND`` subprocesses (``worker``, ``bot``, ``run``,
    ``sandbox``) with the health endpoint on a free port; they get SIGTERM (and must exit) when
    the test ends. Request it after ``emu``: fixtures end in reverse order, so the processes
    stop before the emulator does (a bot reconnecting into a stopping emulator leaves it a
    half-accepted socket)."""
    started: list[WorkerProc] = []

    async def start(command: str = "worker", *args: str, **extra: str) -> WorkerProc:
        log = tmp_path / f"{command}-{len(started)}.log"
        with log.open("wb") as sink:
            proc = await asyncio.create_subprocess_exec(
                *CLI,
                command,
                *args,
                env=ops_env | {"ERRAND_HEALTH_PORT": "0"} | extra,
                cwd=ROOT,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=sink,
            )
        item = WorkerProc(proc, 0, log)
        started.append(item)
        item.port = await _listening_port(log, proc, 30)
        return item

    yield start
    for item in started:
        if item.proc.returncode is None:
            item.proc.send_signal(signal.SIGTERM)
    for item in started:
        await asyncio.wait_for(item.proc.wait(), 30)


@pytest.fixture
def spawn_worker(
    spawn: Callable[..., Awaitable[WorkerProc]],
) -> Callable[..., Awaitable[WorkerProc]]:
    """Start ``errand worker`` subprocesses (see :func:`spawn`)."""

    async def start(**extra: str) -> WorkerProc:
        return await spawn("worker", **extra)

    return start


def discord_env(emu: Emulator) -> dict[str, str]:
    """Environment of a bot process logged in to ``emu`` (fast delivery timings)."""
    assert emu.application is not None
    return {
        "DISCORD_TOKEN": emu.application.token,
        "ERRAND_DISCORD_API_BASE": emu.api_base,
        "ERRAND_DISCORD_GATEWAY_URL": emu.gateway_url,
        "ERRAND_BOT_DEFAULT_KIND": "demo",
        "ERRAND_BOT_EDIT_INTERVAL_SECONDS": "0.1",
        "ERRAND_BOT_DELIVERY_POLL_SECONDS": "0.2",
        "ERRAND_BOT_DELIVERY_LEASE_SECONDS": "1",
        # A delivery still rate limited after discord.py's retries comes back this soon (5 s).
        "ERRAND_BOT_DELIVERY_RATE_LIMITED_SECONDS": "0.2",
        "ERRAND_BOT_GUILD_READY_TIMEOUT": "0.05",
        "ERRAND_BOT_REQUESTS_PER_SECOND": "2000",
    }


async def until(predicate: Callable[[], Awaitable[bool]], within: float = 30.0) -> None:
    """Poll ``predicate`` until true; fail the test after ``within`` seconds."""
    end = time.monotonic() + within
    while not await predicate():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.1)
