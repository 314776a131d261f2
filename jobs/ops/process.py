"""One long-running Errand process, assembled in one place: the engine, a worker if asked, a
transport's parts, and the health endpoint, from the settings in the environment.

``errand worker`` is a process with a worker. ``errand bot``, ``errand run`` and ``errand
sandbox`` are processes with the bot as a part (``bot/run.py``; ``jobs/`` does not import the
bot, so the bot hands its part in). A part is called once the engine is open: it may add
readiness checks and register what closes it, and returns what runs until the process stops.

It ends through the one exit path (:mod:`jobs.exits`): the first SIGTERM/SIGINT, or a part that
ends, stops the process; the worker stops its jobs in bounded time and parts close, all within
the shutdown grace plus :data:`~jobs.runtime.shutdown.EXIT_WITHIN_SECONDS`. What still runs
then (a job's thread that never returns, a part that did not stop) dies with the process: it
exits at once, without waiting for them or for the pool they may hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import asyncpg

from jobs.engine.db import UNAVAILABLE
from jobs.engine.ids import incarnation
from jobs.exits import exit_now, stop_on_signals
from jobs.logs import get_logger
from jobs.ops.app import Engine, load_settings, open_engine
from jobs.runtime.budget import Budget
from jobs.runtime.shutdown import EXIT_WITHIN_SECONDS
from jobs.runtime.ticker import run_ticker
from jobs.runtime.worker import Worker
from jobs.secrets import register
from jobs.tasks import supervise
from jobs.traces import tracing

if TYPE_CHECKING:
    from pydantic import SecretStr

    from jobs.ops.health import Check, HealthServer

log = get_logger("process")

_HEARTBEAT_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.PostgresError,
    TimeoutError,
    *UNAVAILABLE,
)

HEARTBEAT_SECONDS = 5.0
"""How often a process writes its row of the fleet (``errand_process``, the dashboard's
overview): a process not seen for three of these is shown as silent."""

TEARDOWN_SECONDS = 1.0
"""Of the time a stopping process has, what is kept for the end: the health endpoint, the pool,
the exit handlers."""

Part = Callable[["Process"], Awaitable[None]]
"""A transport's part of a process: called once the engine is open, returns what runs until
the process stops (it watches :attr:`Process.stop`, or is closed by what it passed to
:meth:`Process.on_stop`)."""


class Process:
    """One long-running process: :meth:`run` it from a command, or ``await`` :meth:`serve`.

    Args:
        worker: run a worker (``errand worker``, ``errand run``, ``errand sandbox``).
        parts: the transport's parts, by name (the bot).
        announce: told of each stopping signal (``True`` for the second), e.g. to print it.
        quiet: log warnings only (a terminal the person reads, as in the sandbox).
        secrets: the transport's own secrets (its tokens), masked by value in everything the
            process writes, like the engine's (:mod:`jobs.secrets`).
    """

    def __init__(
        self,
        *,
        worker: bool = False,
        parts: Mapping[str, Part] | None = None,
        announce: Callable[[bool], None] | None = None,
        quiet: bool = False,
        secrets: Iterable[str | SecretStr | None] = (),
    ) -> None:
        self.settings = load_settings(quiet=quiet)
        """Read from the environment; a command may adjust them before the process serves."""
        self.with_worker = worker
        self.parts = dict(parts or {})
        self.secrets = list(secrets)
        """Registered as the process starts serving, before the engine opens or any part
        starts: nothing of the process has written a line that could hold one by then (a part
        made once the process exists, as the sandbox's bot, adds its token here first)."""
        self.announce = announce
        self.name = incarnation()
        """This process's name in the fleet (host:pid:random), its worker's too."""
        self.detail: dict[str, Any] = {}
        """What a part tells the fleet of itself (the bot: its shards), with each heartbeat."""
        self.stop = asyncio.Event()
        """Set when the process stops (a signal, or a part that ended)."""
        self.hard = asyncio.Event()
        """Set by a second signal: cut the grace short."""
        self._engine: Engine | None = None
        self._checks: dict[str, Check] = {}
        self._closers: list[Callable[[], Awaitable[None]]] = []

    @property
    def engine(self) -> Engine:
        """The engine, open while the process serves."""
        if self._engine is None:
            raise RuntimeError("the engine is open only while the process serves")
        return self._engine

    def add_check(self, name: str, check: Check) -> None:
        """A readiness check of ``/readyz`` (a part adds its own when it is called)."""
        self._checks[name] = check

    def on_stop(self, close: Callable[[], Awaitable[None]]) -> None:
        """Have ``close`` awaited when the process stops (a client that ends when closed)."""
        self._closers.append(close)

    def run(self) -> int:
        """Serve until stopped, as a command's whole work; the exit code."""
        return asyncio.run(self.serve())

    async def serve(self) -> int:
        """Open the engine, start the worker and the parts, serve health until the process
        stops; the exit code (0) once everything stopped in time.

        Raises:
            The error of a part or the worker that failed, after the rest stopped.
        """
        register(*self.secrets)  # masked by value in every text the process writes from now on
        self.stop, self.hard = stop_on_signals(self.announce)
        settings = self.settings
        # Spans over OTLP when the environment asks for them (the otel extra; else nothing).
        tracing.setup("-".join(self._roles()) or "process")
        async with open_engine(
            settings, pool_max=settings.db.pool_max, claims=self.with_worker
        ) as engine:
            self._engine = engine
            tasks: dict[str, asyncio.Future[None]] = {}
            worker: Worker | None = None
            health: HealthServer | None = None
            try:
                if self.with_worker:
                    worker = self._worker(engine)
                    run = worker.run(self.stop, self.hard)
                    tasks["worker"] = asyncio.create_task(run, name="worker")
                for name, part in self.parts.items():
                    tasks[name] = asyncio.ensure_future(part(self))
                # Every process ticks the schedules, so they tick while any one is up.
                tasks["ticker"] = asyncio.create_task(
                    run_ticker(engine.store, self.stop), name="ticker"
                )
                tasks["heartbeat"] = asyncio.create_task(self._heartbeat(engine), name="heartbeat")
                # What is loaded by now lives as long as the process: keep it out of the
                # collector's full passes, which would walk all of it and pause the event loop
                # for milliseconds, in the middle of a claim.
                gc.freeze()
                health = await self._health(engine)
                await supervise(tasks.values(), self.stop)
            finally:
                self.stop.set()
                stopped = await self._stopped(tasks)
                if health is not None:
                    await health.stop()
                left = worker.left_running if worker is not None else []
                if left or not stopped:
                    # Their threads and tasks cannot be waited for, nor the pool they may hold.
                    unrecorded = worker is not None and bool(worker.left_to_reaper)
                    exit_now(1 if unrecorded or not stopped else 0)
        return 0

    def _worker(self, engine: Engine) -> Worker:
        settings = self.settings
        worker = Worker(
            engine.store,
            engine.registry,
            settings.worker,
            dsn=engine.dsn,
            name=self.name,
            budget=Budget.of(settings.budget),
            assets_dir=settings.assets_dir,
        )
        self.add_check("worker", _worker_check(worker, self.stop))
        return worker

    def _roles(self) -> list[str]:
        """What this process does: ``worker``, and its parts (``bot``, ``dashboard``)."""
        return (["worker"] if self.with_worker else []) + sorted(self.parts)

    async def _heartbeat(self, engine: Engine) -> None:
        """Tell the fleet this process lives, its roles and its parts' detail, until it stops;
        then take its row away. An outage is logged and waited out."""
        roles = self._roles()
        while not self.stop.is_set():
            try:
                # Bounded: a heartbeat stuck in an outage must not hold the process's stop.
                await asyncio.wait_for(
                    engine.store.process_seen(self.name, roles, self.detail), HEARTBEAT_SECONDS
                )
            except _HEARTBEAT_ERRORS as exc:
                log.warning("process.heartbeat_failed", error=f"{type(exc).__name__}: {exc}"[:300])
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), HEARTBEAT_SECONDS)
        with contextlib.suppress(*_HEARTBEAT_ERRORS):
            await asyncio.wait_for(engine.store.process_gone(self.name), TEARDOWN_SECONDS)

    async def _health(self, engine: Engine) -> HealthServer | None:
        """The health endpoint, when ``ERRAND_HEALTH_PORT`` asks for one."""
        where = self.settings.health
        if where.port is None:
            return None
        from jobs.ops.health import HealthServer  # aiohttp: only for a process that serves it

        server = HealthServer(
            engine.pool, host=where.host, port=where.port, kinds=engine.registry.names()
        )
        for name, check in self._checks.items():
            server.add_check(name, check)
        await server.start()
        return server

    async def _stopped(self, tasks: Mapping[str, asyncio.Future[None]]) -> bool:
        """Close the parts and wait for every task, within the grace plus the margin; whether
        all of them ended."""
        within = self.settings.worker.shutdown_grace_seconds + EXIT_WITHIN_SECONDS
        within -= TEARDOWN_SECONDS
        closing = asyncio.gather(*(close() for close in self._closers), return_exceptions=True)
        waits: list[asyncio.Future[Any]] = [*tasks.values(), closing]
        done, pending = await asyncio.wait(waits, timeout=within)
        for name, task in tasks.items():
            if task in done and not task.cancelled() and task.exception() is not None:
                log.error("process.part_failed", part=name, error=repr(task.exception())[:300])
        if pending:
            names = [name for name, task in tasks.items() if task in pending]
            log.error("process.parts_did_not_stop", parts=names or ["closing"])
        return not pending


def _worker_check(worker: Worker, stop: asyncio.Event) -> Check:
    """Ready once ``worker`` listens and claims, until it is told to stop (draining)."""

    async def check() -> str | None:
        if stop.is_set():
            return "draining: stopping on a signal"
        return None if worker.ready.is_set() else "starting"

    return check
