"""Child processes of a job: started in their own session, stopped with all their descendants.

A child is started with ``start_new_session=True``, so it and everything it spawns share one
process group, and with a unique tag in its environment (``ERRAND_PROCESS_TAG``), which its
descendants inherit. When the job is asked to stop, the group and every descendant gets SIGTERM;
whatever is still there after ``kill_grace`` seconds (or when the job's task is cancelled
outright) gets SIGKILL. On any end, a final SIGKILL goes to the group, to the child's process
tree and to every process carrying the tag, so a descendant that left the group (``setsid``)
or was orphaned does not outlive the job either (found through psutil; see
docs/cancellation.md for the escape that remains).

The command's end is the child's exit, not the end of its output: a background process that
keeps the pipe open gets ``drain_seconds`` for what is already written, then is stopped with
the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from jobs.runtime.context import Context

OnLine = Callable[[int, str], Awaitable[None]]


@dataclass(frozen=True)
class ProcessResult:
    """How a child process ended."""

    returncode: int | None  # None: it did not end on its own (stopped or timed out)
    log: bytes  # stdout and stderr, interleaved, cut to ``log_limit`` bytes
    tail: list[str]
    lines: int
    stopped: str | None  # "cancelled" | "timeout" | None
    pid: int


TAG = "ERRAND_PROCESS_TAG"
"""Environment variable marking every process a job started (inherited by descendants)."""


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _descendants(pid: int, tag: str) -> list[psutil.Process]:
    """The child's live process tree, and every process carrying ``tag`` (an orphan that left
    the group, reparented elsewhere)."""
    found: dict[int, psutil.Process] = {}
    with contextlib.suppress(psutil.Error):
        for proc in psutil.Process(pid).children(recursive=True):
            found[proc.pid] = proc
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid in found or proc.pid == me:
            continue
        try:
            if proc.environ().get(TAG) == tag:
                found[proc.pid] = proc
        except (psutil.Error, OSError):
            continue  # gone, a zombie, or another user's: not ours
    return list(found.values())


def _signal_all(pid: int, pgid: int, tag: str, sig: signal.Signals) -> None:
    """``sig`` to the child's group, its tree and every process tagged for this child."""
    _signal_group(pgid, sig)
    for proc in _descendants(pid, tag):
        with contextlib.suppress(psutil.Error, OSError):
            proc.send_signal(sig)


async def run_process(
    ctx: Context,
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    time_limit: float | None = None,
    kill_grace: float = 5.0,
    on_line: OnLine | None = None,
    tail_lines: int = 20,
    log_limit: int = 16 * 1024 * 1024,
    line_limit: int = 64 * 1024,
    drain_seconds: float = 0.5,
) -> ProcessResult:
    """Run ``argv`` (never through a shell) until it exits, times out or the job must stop.

    Raises:
        OSError: the program could not be started.
    """
    ctx.checkpoint()
    tag = f"{ctx.attempt_id}-{secrets.token_hex(8)}"
    child_env = dict(env if env is not None else os.environ) | {TAG: tag}
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=child_env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    pgid = proc.pid  # the leader of a new session: its pid is the group id
    ctx.children.add(pgid)
    ctx.log.info("process.started", pid=proc.pid, program=argv[0])
    log = bytearray()
    tail: deque[str] = deque(maxlen=tail_lines)
    count = 0

    async def emit(raw: bytes) -> None:
        nonlocal count
        # NUL cannot be stored in PostgreSQL text (progress notes, the result's tail).
        line = raw.decode(errors="replace").replace("\x00", "\ufffd")
        tail.append(line)
        count += 1
        if on_line is not None:
            await on_line(count, line)

    async def pump() -> None:
        # Read chunks, not lines: a line longer than the stream's limit (64 KiB) would make
        # readline raise and fail the command. A line is kept up to line_limit bytes.
        assert proc.stdout is not None
        line = bytearray()
        while chunk := await proc.stdout.read(64 * 1024):
            if len(log) < log_limit:
                log.extend(chunk[: log_limit - len(log)])
            start = 0
            while (end := chunk.find(b"\n", start)) != -1:
                line += chunk[start:end][: max(0, line_limit - len(line))]
                await emit(bytes(line))
                line.clear()
                start = end + 1
            line += chunk[start:][: max(0, line_limit - len(line))]
        if line:
            await emit(bytes(line))

    async def exited() -> None:
        # Not proc.wait(): before Python 3.12 it also waits for every holder of the pipe to
        # close it, and a background child may hold it for ever.
        while proc.returncode is None:  # noqa: ASYNC110  (no exit event to wait on)
            await asyncio.sleep(0.02)

    async def finished() -> None:
        await exited()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), timeout=drain_seconds)

    stopped: str | None = None
    reader = asyncio.create_task(pump())
    ended = asyncio.create_task(finished())
    stop = asyncio.create_task(ctx.cancelled.wait())
    try:
        done, _ = await asyncio.wait(
            {ended, stop}, timeout=time_limit, return_when=asyncio.FIRST_COMPLETED
        )
        if ended not in done:
            stopped = "cancelled" if stop in done else "timeout"
            ctx.log.info("process.stopping", pid=proc.pid, why=stopped)
            await asyncio.to_thread(_signal_all, proc.pid, pgid, tag, signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(ended), timeout=kill_grace)
            except TimeoutError:
                await asyncio.to_thread(_signal_all, proc.pid, pgid, tag, signal.SIGKILL)
                await exited()
        if reader.done():
            reader.result()
    finally:
        stop.cancel()
        ended.cancel()
        # Whatever happened (also a cancelled task): no descendant survives the job, whether
        # it stayed in the group, left it (setsid) or was orphaned.
        _signal_group(pgid, signal.SIGKILL)
        with contextlib.suppress(BaseException):
            await asyncio.shield(
                asyncio.to_thread(_signal_all, proc.pid, pgid, tag, signal.SIGKILL)
            )
        if not reader.done():
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(exited(), timeout=kill_grace)
        ctx.children.discard(pgid)
    ctx.log.info("process.ended", pid=proc.pid, returncode=proc.returncode, stopped=stopped)
    return ProcessResult(
        returncode=proc.returncode if stopped is None else None,
        log=bytes(log),
        tail=list(tail),
        lines=count,
        stopped=stopped,
        pid=proc.pid,
    )
