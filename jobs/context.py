"""What a handler receives: the job's identity, cancellation, progress and a bound logger."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import structlog

if TYPE_CHECKING:
    from jobs.store import JobStore


class JobCancelled(Exception):
    """Raised at a checkpoint once the job was asked to stop (cancel, deadline or shutdown)."""


class Context:
    """One attempt's view of its job.

    A handler calls :meth:`checkpoint` (or sleeps with :meth:`sleep`) between pieces of work; when
    a cancel was requested these raise :class:`JobCancelled`, and the runtime records the attempt
    as cancelled (or, on worker shutdown, as released for another worker).
    """

    # Progress writes are coalesced: at most one per job per interval, always the latest.
    PROGRESS_INTERVAL = 0.5

    def __init__(
        self,
        *,
        store: JobStore,
        job_id: int,
        public_id: str,
        attempt_id: int,
        attempt: int,
        kind: str,
    ) -> None:
        self.store = store
        self.job_id = job_id
        self.public_id = public_id
        self.attempt_id = attempt_id
        self.attempt = attempt
        self.kind = kind
        self.cancelled = asyncio.Event()
        """Set when this attempt must stop; a handler may await it directly."""
        self.stop_reason: str | None = None  # "cancel" or "shutdown"
        self.log = structlog.get_logger("job").bind(
            job_id=public_id, attempt_id=attempt_id, kind=kind
        )
        self._progress: dict[str, Any] | None = None
        self._progress_written_at = 0.0
        self._progress_task: asyncio.Task[None] | None = None

    def request_stop(self, why: str) -> None:
        """Tell the handler to stop at its next checkpoint (called by the runtime)."""
        if self.stop_reason is None or why == "cancel":
            self.stop_reason = why
        self.cancelled.set()

    def checkpoint(self) -> None:
        """Raise :class:`JobCancelled` if this attempt was asked to stop."""
        if self.cancelled.is_set():
            raise JobCancelled(self.stop_reason or "cancel")

    async def sleep(self, seconds: float) -> None:
        """Sleep, waking at once (with :class:`JobCancelled`) when asked to stop."""
        self.checkpoint()
        try:
            await asyncio.wait_for(self.cancelled.wait(), timeout=seconds)
        except TimeoutError:
            return
        self.checkpoint()

    async def progress(self, done: float, total: float | None = None, note: str = "") -> None:
        """Report progress; writes are coalesced and fenced by this attempt."""
        self._progress = {"done": done, "total": total, "note": note, "at": time.time()}
        wait = self._progress_written_at + self.PROGRESS_INTERVAL - time.monotonic()
        if wait <= 0:
            await self._write_progress()
        elif self._progress_task is None or self._progress_task.done():
            self._progress_task = asyncio.create_task(self._write_progress_later(wait))

    async def _write_progress_later(self, delay: float) -> None:
        await asyncio.sleep(delay)
        await self._write_progress()

    async def _write_progress(self) -> None:
        if self._progress is None:
            return
        value, self._progress = self._progress, None
        self._progress_written_at = time.monotonic()
        await self.store.set_progress(self.job_id, self.attempt_id, value)

    async def flush(self) -> None:
        """Write pending progress now (the runtime calls this before recording the end)."""
        if self._progress_task is not None and not self._progress_task.done():
            self._progress_task.cancel()
        await self._write_progress()
