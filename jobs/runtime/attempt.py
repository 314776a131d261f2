"""One attempt of a job as the runtime's parts see it: which job and attempt, its records in the
store, its logger, and whether it was asked to stop.

:class:`jobs.runtime.context.Context` (what a handler receives) extends :class:`Attempt` with
the handler API. Steps, effects and assets take an :class:`Attempt`, so they depend on this
module and not on the context that offers them: imports point one way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import TypeVar

import structlog
from structlog.typing import FilteringBoundLogger

from jobs.engine.db import ride_out
from jobs.engine.records import AttemptRecords
from jobs.engine.store import JobStore
from jobs.errors import JobCancelled

T = TypeVar("T")


class StopReason(StrEnum):
    """Why the runtime asked an attempt to stop."""

    CANCEL = "cancel"
    """A cancel request or the deadline: the attempt ends as ``cancelled``."""
    SHUTDOWN = "shutdown"
    """The worker is stopping: the attempt is ``released`` (queued again when the kind is
    retry-safe with an attempt left, else the job ends ``unknown``)."""
    LOST = "lost"
    """The lease was lost: nothing more is recorded for this attempt."""


class Attempt:
    """One attempt's identity, its fenced records, its log and its stop signal."""

    def __init__(
        self,
        *,
        store: JobStore,
        job_id: int,
        public_id: str,
        attempt_id: int,
        attempt: int,
        kind: str,
        write_within: float = 30.0,
    ) -> None:
        self.store = store
        self.job_id = job_id
        self.public_id = public_id
        self.attempt_id = attempt_id
        self.attempt = attempt
        self.kind = kind
        self.records = AttemptRecords(store.pool, job_id, attempt_id, public_id)
        self.cancelled = asyncio.Event()
        """Set when this attempt must stop; a handler may await it directly."""
        self.stop_reason: StopReason | None = None
        self.log: FilteringBoundLogger = structlog.get_logger("job").bind(
            job_id=public_id, attempt_id=attempt_id, kind=kind
        )
        # How long a runtime write (step, usage, progress, effect, asset) retries through a
        # database outage: the lease. Past it the lease is gone anyway; the reaper settles it.
        self.write_within = write_within
        self.effects_ran: set[str] = set()
        """Keys of effects whose ``do`` ran in this attempt (an own intent is then in doubt)."""

    async def write(self, what: str, op: Callable[[], Awaitable[T]]) -> T:
        """Run one of the runtime's own writes for this attempt, riding out a database outage.

        A job fails only because of its own work, never because Errand could not write about
        it: the write is retried while the database is unavailable (:data:`UNAVAILABLE`), up to
        ``write_within`` seconds, then :class:`~jobs.engine.db.DatabaseUnavailable` is raised.
        Every write passed here is idempotent or fenced by the attempt.
        """
        return await ride_out(what, op, within=self.write_within, log_to=self.log)

    def request_stop(self, why: StopReason) -> None:
        """Tell the handler to stop at its next checkpoint (called by the runtime).

        A cancel wins over a shutdown: the job must end cancelled, not be released to run again.
        """
        if self.stop_reason is None or why is StopReason.CANCEL:
            self.stop_reason = why
        self.cancelled.set()

    def checkpoint(self) -> None:
        """Raise :class:`~jobs.errors.JobCancelled` if this attempt was asked to stop."""
        if self.cancelled.is_set():
            raise JobCancelled(self.stop_reason or StopReason.CANCEL)
