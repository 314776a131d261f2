"""What a handler receives: the job's identity, cancellation, progress, a bound logger, and the
runtime API: budgeted steps, guarded effects, assets, blocking work off the event loop, and its
conversation: questions, follow-ups and waits (:mod:`jobs.runtime.waits`)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, overload

import jobs.limits as limits
from jobs.engine.db import UNAVAILABLE
from jobs.engine.mail import Message
from jobs.engine.store import JobStore
from jobs.engine.views import Claim
from jobs.errors import DatabaseUnavailable
from jobs.runtime.asset import AssetRef, put_asset
from jobs.runtime.attempt import Attempt
from jobs.runtime.budget import Budget, Meter, Usage
from jobs.runtime.effect import Do, Lookup, run_effect
from jobs.runtime.step import Steps
from jobs.runtime.waits import NO_DEFAULT, Waits
from jobs.secrets import scrub

# Progress is advisory: when it cannot be written, the next report carries the latest value.
_NOT_WRITTEN: tuple[type[BaseException], ...] = (*UNAVAILABLE, DatabaseUnavailable)

P = ParamSpec("P")
T = TypeVar("T")

CHECKPOINT_LIMIT = 1024 * 1024
"""Bytes of JSON a checkpoint may hold: it is small state, not data (keep data in assets)."""


class Context(Attempt):
    """One attempt's view of its job.

    A handler calls :meth:`checkpoint` (or sleeps with :meth:`sleep`) between pieces of work; when
    a cancel was requested these raise :class:`~jobs.errors.JobCancelled`, and the runtime
    records the attempt as cancelled (or, on worker shutdown, as released for another worker).

    ``await ctx.checkpoint(state)`` also saves ``state`` (small JSON) for the job; the next
    attempt (after a shutdown, a crash or a retry) receives it as :attr:`resume_state`.
    """

    # Progress writes are coalesced: at most one per job per interval, always the latest.
    PROGRESS_INTERVAL = 0.5

    def __init__(
        self,
        claim: Claim,
        *,
        store: JobStore,
        budget: Budget | None = None,
        assets_dir: Path | None = None,
        write_within: float = 30.0,
        park_after: float = 30.0,
        poll_seconds: float = 1.0,
        retry_safe: bool = True,
    ) -> None:
        super().__init__(claim, store=store, write_within=write_within)
        self.resume_state: Any = claim.resume_state
        """What the last ``await ctx.checkpoint(state)`` of an earlier attempt saved; None on a
        fresh start. A handler resumes from it (see docs/kinds.md, "Resuming")."""
        self._progress: dict[str, Any] | None = None
        self._shown: dict[str, Any] | None = None  # the last progress reported
        self._progress_written_at = 0.0
        self._progress_task: asyncio.Task[None] | None = None
        self.budget = budget or Budget()
        """The bounds this attempt runs inside (global settings, then the kind's defaults)."""
        self.assets_dir = assets_dir or Path("assets")
        self.children: set[int] = set()
        """Process groups of running child processes (see :mod:`jobs.kinds.process`)."""
        self._effect_locks: dict[str, asyncio.Lock] = {}
        self._steps = Steps()
        self._threads: set[asyncio.Future[Any]] = set()
        self.waits = Waits(
            self,
            self.mail,
            park_after=park_after,
            poll=poll_seconds,
            # Parked, it runs again from its checkpoint: safe when the kind is retry-safe or
            # saved one (the rule of a release on shutdown, docs/state-machine.md).
            may_park=lambda: retry_safe or self.resume_state is not None,
        )

    @overload
    def checkpoint(self) -> None: ...

    @overload
    def checkpoint(self, state: Any) -> Awaitable[None]: ...

    def checkpoint(self, state: Any = ...) -> Awaitable[None] | None:
        """Stop here if this attempt was asked to (raise :class:`~jobs.errors.JobCancelled`).

        ``ctx.checkpoint()`` only checks. ``await ctx.checkpoint(state)`` first saves ``state``
        (JSON, at most :data:`CHECKPOINT_LIMIT` bytes) with the job's usage so far, fenced by
        this attempt, then checks: a stop right after it loses nothing. The next attempt gets
        ``state`` as :attr:`resume_state`.

        Raises:
            JobCancelled: a stop was requested.
            LeaseLost: (saving) this attempt no longer holds the lease.
            ValueError: (saving) ``state`` is not JSON or is too large.
        """
        if state is ...:
            super().checkpoint()
            return None
        return self._save_checkpoint(state)

    async def _save_checkpoint(self, state: Any) -> None:
        try:
            text = json.dumps(state, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"checkpoint state must be JSON: {exc}") from None
        if len(text.encode()) > CHECKPOINT_LIMIT or limits.has_nul_escape(text):
            raise ValueError(
                f"checkpoint state is {len(text.encode())} bytes (at most {CHECKPOINT_LIMIT}, "
                "no NUL); keep large data in assets"
            )
        usage = self.usage.to_json() if self.usage is not None else None
        read = self.waits.read  # what it read of its mailbox is part of what it saved
        # Idempotent (a plain value, fenced by the attempt): retried through an outage.
        await self.write(
            "checkpoint", lambda: self.records.save_checkpoint(state, usage, mailbox_read=read)
        )
        self.resume_state = state
        self.waits.checkpointed()
        super().checkpoint()

    async def sleep(self, seconds: float) -> None:
        """Sleep, waking at once (with :class:`~jobs.errors.JobCancelled`) when asked to stop.

        Longer than the park threshold (``ERRAND_WORKER_PARK_AFTER_SECONDS``), the job parks
        (``waiting``) instead of holding its worker, and resumes from its checkpoint when the
        time comes (docs/kinds.md, "Questions, messages and waits").
        """
        await self.waits.sleep(seconds)

    async def sleep_until(self, when: datetime) -> None:
        """Sleep until ``when`` (timezone-aware), parked like a long :meth:`sleep`."""
        await self.waits.sleep_until(when)

    async def ask(
        self,
        key: str,
        question: str,
        choices: Sequence[str] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (the issue's API: a question's timeout)
        default: Any = NO_DEFAULT,
        allow_text: bool | None = None,
    ) -> Any:
        """Ask the job's requester ``question`` and return the answer (a ``str`` whose ``by``
        says who answered), once per ``key``: asked again (a resumed attempt) it returns the
        recorded answer at once.

        The question is posted through the outbox (on Discord: a message with a button per
        choice, and an "Answer" button for words of one's own: ``allow_text``, the default
        when there are no choices). It waits in the worker for a while, then parks the job.
        No answer within ``timeout`` seconds: ``default``, or :class:`~jobs.errors.NoAnswer`
        (a :class:`~jobs.errors.JobFailed`) when there is none.

        Raises:
            JobParked: the wait goes on without a worker; let it through.
            JobCancelled: a stop was requested.
            NoAnswer: no answer in time, and no default.
            ValueError: a key, question or choice out of bounds.
        """
        return await self.waits.ask(
            key, question, choices, timeout=timeout, default=default, allow_text=allow_text
        )

    async def messages(self) -> list[Message]:
        """The follow-ups sent to the job (``/job tell``, a mention in its thread) not seen yet,
        oldest first. Each is seen once: what was read is saved with the next checkpoint, and
        an attempt resuming from it sees what came after."""
        return await self.waits.messages()

    async def wait_for_message(self, timeout: float | None = None) -> Message | None:  # noqa: ASYNC109
        """The next follow-up, waiting up to ``timeout`` seconds (parked when it is long);
        None when none came in time."""
        return await self.waits.wait_for_message(timeout)

    async def within_rate(
        self, scope: str, per_minute: int, amount: int = 1, *, what: str, window: float = 60.0
    ) -> float:
        """Take ``amount`` from the fleet's budget ``scope`` of ``per_minute`` (in any
        ``window`` seconds), waiting as long as it takes; the seconds waited.

        The wait is visible (the job's progress note says what it waits for) and cancellable;
        it does not fail the job nor use up an attempt.
        """
        waited = 0.0
        while True:
            wait = await self.write(
                "rate", lambda: self.store.take_rate(scope, amount, per_minute, window)
            )
            if not wait:
                return waited
            self.log.info("job.rate_limited", scope=scope, wait=round(wait, 2))
            shown = self._shown or {}
            await self.progress(
                shown.get("done", 0),
                shown.get("total"),
                f"waiting for {what} ({per_minute}/min), about {max(1, round(wait))} s",
                unit=shown.get("unit", "step"),
            )
            await self.sleep(wait)
            waited += wait

    async def progress(
        self, done: float, total: float | None = None, note: str = "", *, unit: str = "step"
    ) -> None:
        """Report ``done`` finished units of ``total`` (None: unknown) with a short ``note``.

        Every transport shows it as one line, ``Step 5 of 5 · counting`` (``unit`` names what is
        counted), with a bar that reaches 100 % when ``done == total``. Writes are coalesced and
        fenced by this attempt, and never go backwards: a report below the recorded ``done``
        (an attempt redoing work) is not shown until it catches up.
        """
        self._progress = self._shown = {
            "done": done,
            "total": total,
            "note": scrub(note),
            "unit": unit,
            "at": time.time(),
        }
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
        try:
            await self.write(
                "progress", lambda: self.store.set_progress(self.job_id, self.attempt_id, value)
            )
        except _NOT_WRITTEN as exc:
            # Progress is advisory: a database blip must not fail the job; the next report
            # carries the latest value anyway.
            self.log.warning("job.progress_not_written", error=str(exc))

    async def flush(self) -> None:
        """Write pending progress now (the runtime calls this before recording the end)."""
        if self._progress_task is not None and not self._progress_task.done():
            self._progress_task.cancel()
        await self._write_progress()

    # -- the runtime API (budgets, effects, assets, blocking work) -------------------------

    def limit(self, budget: Budget | None) -> None:
        """Tighten this attempt's budget (e.g. from job params); a bound is never loosened."""
        self.budget = self.budget.tighten(budget)

    def step(self, name: str) -> AbstractAsyncContextManager[Meter]:
        """A named block with its own budget; its start, end, usage and outcome are recorded.

        Raises (on entry) JobCancelled once a stop was requested, BudgetExceeded when the job's
        step budget is spent; (inside) BudgetExceeded on the first excess of a bound.
        """
        return self._steps.step(self, self.budget, name)

    @property
    def usage(self) -> Usage | None:
        """The job's usage so far (all attempts), once the first step was opened."""
        return self._steps.usage

    async def effect(self, key: str, do: Do, lookup: Lookup | None = None) -> Any:
        """Do a side effect at most once for this job under a stable ``key``.

        See :mod:`jobs.runtime.effect`.
        """
        # Two calls with one key at once (asyncio.gather) take turns: the second sees the
        # first's outcome instead of its intent, which would look like an effect in doubt.
        async with self._effect_locks.setdefault(key, asyncio.Lock()):
            self.checkpoint()  # no new effect starts once a stop was requested
            # A cancel arriving now lets the effect complete and record its outcome first.
            with self.guarded():
                return await run_effect(self, key, do, lookup)

    async def asset(
        self, name: str, data: bytes | str, content_type: str | None = None
    ) -> AssetRef:
        """Keep ``data`` as an asset of the job; it outlives the job and its cancellation."""
        return await put_asset(self, self.assets_dir, name, data, content_type)

    async def run_blocking(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run blocking or CPU-heavy ``fn`` in a thread so other jobs keep their heartbeats.

        A cancel interrupts the handler's await at once (CancelledError), but nothing can stop
        a thread: the runtime keeps the attempt (and its lease) until every thread it started
        has returned (:meth:`threads_stopped`), and drops the result: releasing the job while
        the thread still works would run the job twice at once.
        """
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        future = loop.run_in_executor(None, call)
        self._threads.add(future)
        future.add_done_callback(self._threads.discard)
        # Shielded: cancelling the handler must not mark a thread that still runs as done.
        return await asyncio.shield(future)

    @property
    def threads_running(self) -> bool:
        """Whether a thread started by :meth:`run_blocking` still runs."""
        return bool(self._threads)

    async def threads_stopped(self) -> None:
        """Wait until every thread this attempt started with :meth:`run_blocking` returned."""
        while self._threads:
            await asyncio.wait(list(self._threads))

    async def race(self, work: Awaitable[T]) -> T:
        """Await ``work``, abandoning it at once when a stop is requested.

        Used around calls that must not outlive a cancel, e.g. a model HTTP request: the
        request's task is cancelled (closing its connection) and JobCancelled is raised.
        """
        self.checkpoint()
        task = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(self.cancelled.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if task.cancelled():
            self.checkpoint()
        return task.result()
