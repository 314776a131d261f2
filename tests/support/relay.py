"""A cuttable TCP relay in front of a test's PostgreSQL, to cut the database off like a network
outage."""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs, urlsplit, urlunsplit

from discord_emulator.server import stop_accepting


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
