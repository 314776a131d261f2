"""Run one of discord.py's own example bots (vendored in ``examples/``) against an emulator.

An example ends with ``client.run('token')``, which blocks: it sets up logging, then
``asyncio.run(client.start(token))``. :func:`run_example` executes the example's file as
``__main__`` in a thread of its own, so ``run`` gets its own event loop exactly as under
``python example.py``, while the test's loop serves the emulator. The only thing added is
:func:`discord_emulator.patched` around it, which points discord.py at the emulator.

Some examples carry placeholders their comments ask a user to replace (``discord.Object(id=0)
# replace with your guild id``). ``fill`` replaces such a text in the code that runs, not in
the file; each must occur exactly once, so an upstream change to the example fails loudly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import discord

from discord_emulator import Emulator, patched

EXAMPLES = Path(__file__).parent / "examples"


class _Records(logging.Handler):
    """Keeps the ``discord`` logger's errors: a failing handler in an example is logged
    ("Ignoring exception in ..."), not raised."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class RunningExample:
    """An example bot running in its thread: its module namespace, client and logged errors."""

    path: Path
    namespace: dict[str, Any]
    thread: threading.Thread
    errors: _Records
    failure: list[BaseException] = field(default_factory=list)

    @property
    def client(self) -> discord.Client:
        found = [v for v in self.namespace.values() if isinstance(v, discord.Client)]
        if len(found) != 1:
            raise LookupError(f"{self.path.name} made {len(found)} clients, not one")
        return found[0]

    def logged_errors(self) -> list[str]:
        return [
            self.errors.format(r) if r.exc_info is None else f"{r.getMessage()}: {r.exc_info[1]!r}"
            for r in self.errors.records
        ]


def example_source(relpath: str, fill: Mapping[str, str] | None = None) -> str:
    source = (EXAMPLES / relpath).read_text(encoding="utf-8")
    for old, new in (fill or {}).items():
        count = source.count(old)
        if count != 1:
            raise ValueError(f"{relpath}: {old!r} occurs {count} times, not once")
        source = source.replace(old, new)
    return source


@asynccontextmanager
async def run_example(
    emu: Emulator,
    relpath: str,
    *,
    fill: Mapping[str, str] | None = None,
    timeout: float = 10.0,  # noqa: ASYNC109
) -> AsyncIterator[RunningExample]:
    """Run ``examples/<relpath>`` until the block exits; ready once the bot has every guild it
    is in (discord.py's ``on_ready`` itself comes ``guild_ready_timeout``, 2 s, later)."""
    path = EXAMPLES / relpath
    code = compile(example_source(relpath, fill), str(path), "exec")
    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": str(path)}
    logger = logging.getLogger("discord")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    records = _Records()
    logger.addHandler(records)

    def main() -> None:
        try:
            exec(code, namespace)
        except BaseException as exc:  # the test reports it
            running.failure.append(exc)

    thread = threading.Thread(target=main, name=f"example-{relpath}", daemon=True)
    running = RunningExample(path, namespace, thread, records)
    bot_id = emu.bot_user.id
    guild_ids = [g.id for g in emu.state.guilds.values() if bot_id in g.members]
    with patched(emu):
        thread.start()
        try:
            await _until_connected(running, guild_ids, timeout)
            yield running
        finally:
            await _stop(running)
            logger.handlers[:] = saved[0]
            logger.setLevel(saved[1])
            logger.propagate = saved[2]
    if running.failure:
        raise running.failure[0]
    assert running.logged_errors() == []


def _connected(running: RunningExample, guild_ids: list[int]) -> bool:
    try:
        client = running.client
    except LookupError:
        return False
    guilds = [client.get_guild(g) for g in guild_ids]
    return client.user is not None and all(g is not None and not g.unavailable for g in guilds)


async def _until_connected(running: RunningExample, guild_ids: list[int], timeout: float) -> None:  # noqa: ASYNC109
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not _connected(running, guild_ids):
        if running.failure:
            raise running.failure[0]
        if not running.thread.is_alive():
            raise RuntimeError(f"{running.path.name} stopped before it connected")
        if loop.time() > deadline:
            raise TimeoutError(f"{running.path.name} did not connect within {timeout}s")
        await asyncio.sleep(0.01)


async def _stop(running: RunningExample) -> None:
    with contextlib.suppress(LookupError):
        client = running.client
        if running.thread.is_alive() and isinstance(client.loop, asyncio.AbstractEventLoop):
            done = asyncio.run_coroutine_threadsafe(client.close(), client.loop)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.wrap_future(done), 10)
    await asyncio.to_thread(running.thread.join, 10)
    if running.thread.is_alive():
        raise RuntimeError(f"{running.path.name} did not stop")
