"""One attempt of a job as the runtime's parts see it: which job and attempt, its records in the
store, its logger, and whether it was asked to stop.

:class:`jobs.runtime.context.Context` (what a handler receives) extends :class:`Attempt` with
the handler API. Steps, effects and assets take an :class:`Attempt`, so they depend on this
module and not on the context that offers them: imports point one way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from jobs.engine.attempt_mail import AttemptMail
from jobs.engine.db import ride_out
from jobs.engine.mail import Wait
from jobs.engine.records import AttemptRecords
from jobs.engine.store import JobStore
from jobs.engine.views import Claim
from jobs.errors import JobCancelled, JobParked
from jobs.logs import structlog_module

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

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

    def __init__(self, claim: Claim, *, store: JobStore, write_within: float = 30.0) -> None:
        self.claim = claim
        """The job and attempt this is, as the claim returned them."""
        self.store = store
        self.records = AttemptRecords(store.pool, claim.job_id, claim.attempt_id, claim.public_id)
        self.mail = AttemptMail(store.pool, claim.job_id, claim.attempt_id, claim.public_id)
        """Its questions and its mailbox (:mod:`jobs.runtime.waits` waits on them)."""
        self.parked: Wait | None = None
        """Set when the handler parks: what it waits for (the attempt then ends ``parked``)."""
        self.cancelled = asyncio.Event()
        """Set when this attempt must stop; a handler may await it directly."""
        self.stop_reason: StopReason | None = None
        self.cancel_delivered = False
        """Whether a cancel was delivered to the handler's task as CancelledError."""
        self.job_deadline: asyncio.Timeout | None = None
        """The job's time bound (``job_seconds``) around the handler, once it runs: a step
        cancelled by it ran out of the job's budget, it was not cancelled."""
        self._task: asyncio.Task[Any] | None = None
        self._guards = 0
        self._log: FilteringBoundLogger | None = None
        # How long a runtime write (step, usage, progress, effect, asset) retries through a
        # database outage; the worker gives no bound: the outage does not cost the lease.
        self.write_within = write_within
        self.effects_ran: set[str] = set()
        """Keys of effects whose ``do`` ran in this attempt (an own intent is then in doubt)."""

    @property
    def job_id(self) -> int:
        return self.claim.job_id

    @property
    def public_id(self) -> str:
        """The job's public id."""
        return self.claim.public_id

    @property
    def attempt_id(self) -> int:
        """This attempt's id: the fencing token of every write it makes."""
        return self.claim.attempt_id

    @property
    def attempt(self) -> int:
        """This attempt's number (1 for the first run; every start counts)."""
        return self.claim.attempt

    @property
    def kind(self) -> str:
        return self.claim.kind

    @property
    def log(self) -> FilteringBoundLogger:
        """A structlog logger bound to the job, attempt and kind (made on first use: most jobs
        never log, and binding one per job is a measurable share of a no-op job's cost)."""
        if self._log is None:
            logger = structlog_module().get_logger("job")
            self._log = logger.bind(
                job_id=self.public_id, attempt_id=self.attempt_id, kind=self.kind
            )
        return self._log

    async def write(self, what: str, op: Callable[[], Awaitable[T]]) -> T:
        """Run one of the runtime's own writes for this attempt, riding out a database outage.

        A job fails only because of its own work, never because Errand could not write about
        it: the write is retried while the database is unavailable (:data:`UNAVAILABLE`), up to
        ``write_within`` seconds (or until this process closes its pool), then
        :class:`~jobs.engine.db.DatabaseUnavailable` is raised.
        Every write passed here is idempotent or fenced by the attempt.
        """
        return await ride_out(
            what, op, within=self.write_within, log_to=self.log, pool=self.store.pool
        )

    def request_stop(self, why: StopReason) -> None:
        """Tell the handler to stop (called by the runtime).

        Every request sets :attr:`cancelled` (checkpoints raise). A cancel also cancels the
        handler's task at its next await, whatever it awaits, unless it is inside a guarded
        region (:meth:`guarded`: an effect, a child process stopping gracefully), which
        completes first. A shutdown stays cooperative: jobs get the grace to stop themselves.
        A cancel wins over a shutdown: the job must end cancelled, not be released to run again.
        """
        if self.stop_reason is None or why is StopReason.CANCEL:
            self.stop_reason = why
        self.cancelled.set()
        if why is StopReason.CANCEL:
            self._deliver_cancel()

    def bind(self, task: asyncio.Task[Any] | None) -> None:
        """Run the handler in ``task`` (None: it ended); a cancel requested before is delivered."""
        self._task = task
        if task is not None and self.stop_reason is StopReason.CANCEL:
            # Called from inside ``task``: cancel it once the handler first waits, not now (a
            # handler that stops at its first checkpoint must not meet a stray CancelledError
            # later, while its end is being recorded).
            asyncio.get_running_loop().call_soon(self._deliver_cancel)

    def _deliver_cancel(self) -> None:
        task = self._task
        if task is None or task.done() or self._guards or self.cancel_delivered:
            return
        self.cancel_delivered = True
        task.cancel("cancel requested")

    @contextmanager
    def guarded(self) -> Iterator[None]:
        """A region a cancel does not interrupt; it ends the job (JobCancelled) once left.

        Used around guarded effects (``ctx.effect``) and child processes, which have their own
        way to stop (SIGTERM, then SIGKILL after the kill grace).
        """
        self._guards += 1
        try:
            yield
        finally:
            self._guards -= 1
        if not self._guards and self.stop_reason is StopReason.CANCEL:
            raise JobCancelled(StopReason.CANCEL)

    def checkpoint(self) -> None:
        """Raise :class:`~jobs.errors.JobCancelled` if this attempt was asked to stop, and
        :class:`~jobs.errors.JobParked` again if the handler parked (it must not go on)."""
        if self.cancelled.is_set():
            raise JobCancelled(self.stop_reason or StopReason.CANCEL)
        if self.parked is not None:
            raise JobParked("the job parked; it resumes from its checkpoint")
