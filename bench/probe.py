"""What the benchmark's handlers report to the bench process: one line on the worker's stdout.

Both workers (``errand worker`` and pgqueuer's ``pgq run``) run in their own process; a handler
writes ``EVENT ID T`` with ``T`` = ``time.monotonic()`` (one clock for every process on the
machine) straight to file descriptor 1, unbuffered, so the bench sees it at once.
"""

from __future__ import annotations

import os
import time

_first = True


def emit(event: str, job_id: object, at: float | None = None) -> None:
    """Report ``event`` of job ``job_id`` at ``at`` (default: now)."""
    os.write(1, f"{event} {job_id} {time.monotonic() if at is None else at!r}\n".encode())


def first(job_id: object) -> None:
    """Report the first job this process runs (throughput starts there)."""
    global _first
    if _first:
        _first = False
        emit("first", job_id)
