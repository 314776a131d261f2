"""Child processes of a job: started in their own session, stopped with their whole group.

A child is started with ``start_new_session=True``, so it and everything it spawns share one
process group. When the job is asked to stop the group gets SIGTERM; if it is still there after
``kill_grace`` seconds (or the job's task is cancelled outright) it gets SIGKILL. On any exit the
group gets a final SIGKILL so no grandchild outlives the job.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


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
) -> ProcessResult:
    """Run ``argv`` (never through a shell) until it exits, times out or the job must stop.

    Raises:
        OSError: the program could not be started.
    """
    ctx.checkpoint()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env) if env is not None else None,
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
        await proc.wait()

    stopped: str | None = None
    reader = asyncio.create_task(pump())
    stop = asyncio.create_task(ctx.cancelled.wait())
    try:
        done, _ = await asyncio.wait(
            {reader, stop}, timeout=time_limit, return_when=asyncio.FIRST_COMPLETED
        )
        if reader not in done:
            stopped = "cancelled" if stop in done else "timeout"
            ctx.log.info("process.stopping", pid=proc.pid, why=stopped)
            _signal_group(pgid, signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(reader), timeout=kill_grace)
            except TimeoutError:
                _signal_group(pgid, signal.SIGKILL)
                await reader
        else:
            reader.result()
    finally:
        stop.cancel()
        # Whatever happened (also a cancelled task): no member of the group survives the job.
        _signal_group(pgid, signal.SIGKILL)
        if not reader.done():
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(proc.wait(), timeout=kill_grace)
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
