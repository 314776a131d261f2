"""Stopping a server while a client connects leaves no socket behind.

CPython's asyncio builds an accepted connection's transport in a task of its own; a
``Server.close()`` between the accept and that task makes the transport's set-up fail silently
and leaks the socket (a ResourceWarning, which fails a test here). A client reconnecting as a test
stops the emulator, or cuts a database relay, hits that window (CI saw it in the readyz test).
"""

from __future__ import annotations

import asyncio
import gc
import socket

from discord_emulator import Emulator
from discord_emulator.server import stop_accepting
from discord_emulator.testing import fast_config


async def _accepted_but_not_yet_attached(port: int) -> socket.socket:
    """A client whose connection the server has accepted and not yet given a transport."""
    client = socket.create_connection(("127.0.0.1", port))
    # Turn 1: the loop sees the listening socket readable and accepts. Turn 2: the accepted
    # socket's transport is still to be made (its task runs after this one).
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return client


async def test_a_connection_accepted_as_the_server_stops_reaches_its_owner() -> None:
    accepted: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda _r, w: accepted.append(w), "127.0.0.1", 0)
    client = await _accepted_but_not_yet_attached(server.sockets[0].getsockname()[1])
    try:
        await stop_accepting(server)
        server.close()
        await server.wait_closed()
        # Without stop_accepting this is 0 and the socket is lost to the garbage collector.
        assert len(accepted) == 1
        accepted[0].transport.abort()
        await asyncio.sleep(0)
    finally:
        client.close()
    accepted.clear()
    gc.collect()  # a leaked transport would warn here, failing the test


async def test_stopping_the_emulator_as_a_client_connects_leaks_nothing() -> None:
    emu = Emulator(fast_config())
    await emu.start()
    client = await _accepted_but_not_yet_attached(emu.port)
    try:
        await emu.stop()
    finally:
        client.close()
    gc.collect()
