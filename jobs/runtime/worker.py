"""The worker runtime: claims jobs, runs their handlers as asyncio tasks, keeps their leases.

One worker process runs up to ``concurrency`` jobs. It wakes on ``LISTEN errand_job`` (with a
polling fallback), which a submit sends only while the worker is listed as waiting (it has free
slots and found nothing to claim; docs/state-machine.md, "Waking a worker"), claims in batches,
renews every lease it holds with one statement per heartbeat, learns of cancels by ``LISTEN
errand_cancel`` *and* by the heartbeat reply (so a missed NOTIFY never loses a cancel), tells an
attempt waiting for an answer or a message that one came (``LISTEN errand_mailbox``; a waiting
attempt also looks on its own every ``poll_seconds``), records how attempts end in batches, and
runs the reaper. How it stops, in bounded time, is
:mod:`jobs.runtime.shutdown`.

Over 400 lines on purpose: one class whose loops (listen, claim, heartbeat, reaper, flush) share
the attempts it runs and the ends it has yet to write; split across modules, they would reach
into each other's attributes for that same state.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg

from jobs.engine import observe
from jobs.engine.db import UNAVAILABLE, connect, is_unavailable
from jobs.engine.ids import incarnation
from jobs.engine.line import Fairness
from jobs.engine.moves import Finish
from jobs.engine.store import JobStore, ReaperWatch
from jobs.engine.views import Claim
from jobs.errors import DatabaseUnavailable
from jobs.logs import bind_contextvars, get_logger
from jobs.retry import backoff
from jobs.runtime.attempt import StopReason
from jobs.runtime.budget import Budget
from jobs.runtime.context import Context
from jobs.runtime.execute import execute, stopped
from jobs.runtime.registry import Kind, Registry
from jobs.runtime.shutdown import RECORD_WITHIN_SECONDS, Running, left_behind, stop_attempts
from jobs.settings import BudgetSettings, WorkerSettings, default_data_dir
from jobs.tasks import supervise
from jobs.traces import tracing

log = get_logger("worker")

# A failed reaper round (a conflict or an outage) is retried next round; it never stops a worker.
_REAPER_ERRORS: tuple[type[BaseException], ...] = (asyncpg.PostgresError, *UNAVAILABLE)
# Refreshing the statistics at start may also run out of time; either way the worker starts.
_STATISTICS_ERRORS: tuple[type[BaseException], ...] = (TimeoutError, *_REAPER_ERRORS)


STATISTICS_CHECK_SECONDS = 10.0
"""How often a worker with a backlog checks that the job table's statistics know of it."""

STATISTICS_START_WAIT = 2.0
"""How long a starting worker waits for the job table's statistics to be refreshed."""


def _retry_in(failures: int) -> float:
    """How long a loop waits after its ``failures``-th failure in a row: 0.2 s doubling to 5 s."""
    return backoff(failures, base=0.2, cap=5.0, jitter=False)


class Worker:
    """Runs jobs from one store until stopped."""

    def __init__(
        self,
        store: JobStore,
        registry: Registry,
        settings: WorkerSettings,
        *,
        dsn: str,
        name: str | None = None,
        budget: Budget | None = None,
        assets_dir: Path | None = None,
    ) -> None:
        self.store = store
        self.registry = registry
        self.settings = settings
        self.dsn = dsn
        self.name = name or incarnation()
        # The global bounds (ERRAND_BUDGET_*) and where large assets go.
        self.budget = budget or Budget.of(BudgetSettings())
        self.assets_dir = assets_dir or default_data_dir() / "assets"
        self.running: dict[int, Running] = {}
        """The attempts this worker runs, by attempt id; whoever removes one records its end."""
        self._wake = asyncio.Event()
        self._notified = False  # a NOTIFY errand_job came since the last claim
        # The LISTEN connection's backend under which this worker is listed as waiting, if it is.
        self._waiting_pid: int | None = None
        self._early_cancels: dict[int, float] = {}  # attempt id -> when its cancel arrived
        self._stopping = asyncio.Event()
        self._finished: list[Finish] = []
        self._writing: list[Finish] = []  # the batch being written by the flush loop
        self._flush = asyncio.Event()
        self._flushing: asyncio.Future[Any] | None = None
        self._listener: asyncpg.Connection | None = None
        self.left_running: list[str] = []
        """Public ids of jobs whose handler or thread still ran when the worker stopped: their
        ends are recorded, and they die with the process, which must exit now."""
        self.left_to_reaper: list[str] = []
        """Of those, the jobs whose end could not be recorded: their leases expire and the
        reaper settles them."""
        self._fairness = Fairness(settings.fair_by_group, settings.running_per_requester)
        self._statistics_checked = -STATISTICS_CHECK_SECONDS
        self._statistics: asyncio.Task[None] | None = None  # a background refresh, if any
        self.ready = asyncio.Event()
        """Set once the worker listens and is claiming."""

    # -- lifecycle ------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, hard_stop: asyncio.Event | None = None) -> None:
        """Run until ``stop`` is set, then shut down gracefully (``hard_stop`` cuts it short)."""
        log.info("worker.started", worker=self.name, concurrency=self.settings.concurrency)
        # A worker that starts on a backlog its table's statistics do not know of (a deploy after
        # a burst) has them refreshed before its first claim, so even that one reads the claim
        # index instead of sorting the backlog; bounded, so an outage only delays the start.
        await self._refresh_statistics(within=STATISTICS_START_WAIT)
        listening = asyncio.Event()
        loops = [
            asyncio.create_task(
                self._restarting("listen", lambda: self._listen_loop(listening)), name="listen"
            ),
            asyncio.create_task(self._restarting("claim", self._claim_loop), name="claim"),
            asyncio.create_task(
                self._restarting("heartbeat", self._heartbeat_loop), name="heartbeat"
            ),
            asyncio.create_task(self._restarting("reaper", self._reaper_loop), name="reaper"),
            asyncio.create_task(self._restarting("flush", self._flush_loop), name="flush"),
        ]
        await listening.wait()
        self.ready.set()
        try:
            # Each loop restarts itself after any error (_restarting), so this returns at the stop.
            await supervise(loops, stop)
            await self._shutdown(hard_stop or asyncio.Event())
        finally:
            background = [*loops, *([self._statistics] if self._statistics else [])]
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            if self._flushing is not None and not self._flushing.done():
                await asyncio.gather(self._flushing, return_exceptions=True)
            if self._finished:
                try:
                    await self.store.finish(self._drain())
                except UNAVAILABLE as exc:  # the leases expire; the reaper settles these jobs
                    log.warning("worker.final_flush_failed", error=str(exc))
            if self._waiting_pid is not None:  # else submits go on waking a worker that left
                with contextlib.suppress(*_REAPER_ERRORS):
                    await self.store.stop_waiting(self._waiting_pid)
            if self.left_to_reaper:
                log.warning("worker.left_jobs_to_lease_expiry", jobs=self.left_to_reaper)
            log.info("worker.stopped", worker=self.name)

    async def _restarting(self, name: str, loop: Callable[[], Awaitable[None]]) -> None:
        """Run one background loop for the worker's life: no error ends it.

        Each loop handles database outages itself; anything that still escapes (an outage in a
        place nobody foresaw, a bug) is logged and the loop starts again after a backoff, so a
        worker never exits with jobs it has not released.
        """
        failures = 0
        while True:
            started = time.monotonic()
            try:
                await loop()
                return
            except Exception as exc:
                event = "worker.loop_unavailable" if is_unavailable(exc) else "worker.loop_failed"
                log.error(event, loop=name, error=f"{type(exc).__name__}: {exc}"[:300])
            failures = 1 if time.monotonic() - started > 30 else failures + 1
            await asyncio.sleep(_retry_in(failures))

    async def _shutdown(self, hard_stop: asyncio.Event) -> None:
        """Stop claiming, then stop the running attempts in bounded time
        (:mod:`jobs.runtime.shutdown`); record how those still running at the bound end."""
        self._stopping.set()
        if self.running:
            grace = self.settings.shutdown_grace_seconds
            await stop_attempts(self.running, grace=grace, hard=hard_stop)
        if self.running:
            await self._leave_running()

    async def _leave_running(self) -> None:
        """Record the end of every attempt still running (:func:`left_behind`) and let go of
        them: their handlers and threads die with the process."""
        left, self.running = list(self.running.values()), {}
        self.left_running = [item.ctx.public_id for item in left]
        finishes = []
        for item in left:
            item.task.cancel()
            finish = left_behind(item, self.settings.lease_seconds)
            elapsed = time.monotonic() - item.started
            observe.attempt_ended(item.ctx.kind, finish.outcome if finish else None, elapsed)
            if finish is not None:
                finishes.append(finish)
        log.warning("worker.left_running", jobs=self.left_running)
        try:
            async with asyncio.timeout(RECORD_WITHIN_SECONDS):
                await self.store.finish(finishes)
        except _REAPER_ERRORS as exc:  # a refusal or an outage, the timeout included
            log.warning("worker.final_flush_failed", error=f"{type(exc).__name__}: {exc}"[:300])
            self.left_to_reaper = self.left_running

    # -- wake-ups -------------------------------------------------------------------------

    async def _listen_loop(self, listening: asyncio.Event) -> None:
        """Keep one LISTEN connection, reconnecting with backoff when it is lost.

        While it is down, polling (``poll_seconds``) and heartbeat replies still find new jobs
        and cancels; after a reconnect the claim loop is woken, since NOTIFYs were missed.
        """
        failures = 0
        while True:
            lost = asyncio.Event()
            conn: asyncpg.Connection | None = None
            try:
                conn = await connect(self.dsn)
                conn.add_termination_listener(lambda _conn, lost=lost: lost.set())
                await conn.add_listener("errand_job", self._on_job)
                await conn.add_listener("errand_cancel", self._on_cancel)
                await conn.add_listener("errand_mailbox", self._on_mail)
                self._listener, failures = conn, 0
                listening.set()
                self._wake.set()
                await lost.wait()
                log.warning("worker.listener_lost")
            except UNAVAILABLE as exc:
                log.warning(
                    "worker.listen_failed", error=str(exc), retry_in=_retry_in(failures + 1)
                )
            finally:
                listening.set()  # polling works without it; do not hold the start
                self._listener = None
                if conn is not None and not conn.is_closed():
                    with contextlib.suppress(Exception):
                        await conn.close()
            failures += 1
            await asyncio.sleep(_retry_in(failures))

    async def _unavailable(self, what: str, exc: BaseException, failures: int) -> int:
        """Log a database outage seen by one loop, wait, and return the failures so far."""
        failures += 1
        delay = _retry_in(failures)
        log.warning("worker.database_unavailable", during=what, error=str(exc), retry_in=delay)
        await asyncio.sleep(delay)
        return failures

    def _on_job(self, *_: Any) -> None:
        self._notified = True
        self._wake.set()

    def _on_mail(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        text = str(payload)
        item = self.running.get(int(text)) if text.isdigit() else None
        if item is not None:
            item.ctx.waits.arrived()

    def _on_cancel(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        text = str(payload)
        if not text.isdigit():
            return
        item = self.running.get(int(text))
        if item is not None:
            item.ctx.request_stop(StopReason.CANCEL)
            return
        # The claim's COMMIT makes the job visible as running before this worker has registered
        # the attempt; a cancel in that gap must not wait for the next heartbeat. Cancels of
        # other workers' attempts land here too, so entries are kept only briefly.
        now = time.monotonic()
        self._early_cancels[int(text)] = now
        if len(self._early_cancels) > 1000:
            self._early_cancels = {a: t for a, t in self._early_cancels.items() if now - t < 60}

    # -- loops ----------------------------------------------------------------------------

    async def _claim_loop(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            free = self.settings.concurrency - len(self.running)
            if free > 0:
                self._wake.clear()
                limit = min(free, self.settings.claim_batch)
                try:
                    claimed = await self._claim(free, limit)
                    # The queue is empty: list as waiting, and look once more (a submit before
                    # the listing woke nobody).
                    listed = not claimed and await self._list_waiting()
                except UNAVAILABLE as exc:
                    self._waiting_pid = None  # whether the listing is there is not known
                    failures = await self._unavailable("claim", exc, failures)
                    continue
                failures = 0
                if claimed == limit:
                    self._check_statistics()  # a backlog: the claim's plan must know of it
                if claimed or listed:
                    # Claim again at once. While claims find jobs (a burst) the worker stays
                    # unlisted after its wake-up, so the burst's submits need not wake it.
                    await asyncio.sleep(0)
                    continue
            else:
                # Every slot is busy: a wake-up that came meanwhile (a NOTIFY) cannot be acted
                # on, and left set it would end every wait at once, a loop that burns a core
                # for as long as the slots stay busy. A slot that frees sets it again.
                self._wake.clear()
            # asyncio.timeout, not wait_for: no task per wait on the way from a NOTIFY to a claim.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.poll_seconds):
                    await self._wake.wait()

    async def _claim(self, free: int, limit: int) -> int:
        """Claim and start up to ``limit`` jobs, with ``free`` slots; how many it claimed.

        The claim takes this worker's listing as waiting away after a NOTIFY (it is awake now:
        further submits need not wake it) or when it fills every free slot (busy workers are not
        woken; they claim again when a slot frees).
        """
        if self._waiting_pid is not None and (
            self._listener is None or self._listener.get_server_pid() != self._waiting_pid
        ):
            self._waiting_pid = None  # listed under a LISTEN connection since replaced
        notified, self._notified = self._notified, False
        claims = await self.store.claim(
            self.name,
            limit=limit,
            lease_seconds=self.settings.lease_seconds,
            kinds=self.registry.names(),
            fairness=self._fairness,
            waiting_pid=self._waiting_pid,
            unlist_at=0 if notified else free,
        )
        if notified or len(claims) >= free:
            self._waiting_pid = None
        for claim in claims:
            self._start(claim)
        return len(claims)

    async def _list_waiting(self) -> bool:
        """List this worker as waiting for work, unless it is listed or not listening; whether it
        listed itself (then it must claim once more before it waits: the listing returns once
        every submit that did not see it has committed, docs/state-machine.md)."""
        listener = self._listener
        if self._waiting_pid is not None or listener is None:
            return False
        pid = listener.get_server_pid()
        await self.store.wait_for_jobs(self.name, pid)
        self._waiting_pid = pid
        return True

    async def _refresh_statistics(self, within: float | None = None) -> None:
        """Have the job table analyzed when its statistics miss a backlog
        (``JobStore.refresh_statistics``). Never raises: a slow ANALYZE (past ``within``) or an
        outage is logged, and the claim loop checks again later."""
        try:
            if await asyncio.wait_for(self.store.refresh_statistics(), within):
                log.info("worker.analyzed_job_table")
        except _STATISTICS_ERRORS as exc:
            log.warning("worker.analyze_failed", error=f"{type(exc).__name__}: {exc}"[:300])

    def _check_statistics(self) -> None:
        """In the background, at most every :data:`STATISTICS_CHECK_SECONDS`:
        :meth:`_refresh_statistics` while the claims come back full."""
        now = time.monotonic()
        if now - self._statistics_checked < STATISTICS_CHECK_SECONDS:
            return
        self._statistics_checked = now
        if self._statistics is None or self._statistics.done():
            self._statistics = asyncio.create_task(self._refresh_statistics(), name="statistics")

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat_seconds)
            try:
                await self.heartbeat()
            except UNAVAILABLE as exc:
                # Jobs keep running and keep their attempts: once the database is back each has
                # a lease to heartbeat (the reaper's grace); one settled meanwhile (this worker
                # was cut off alone) is answered "lost" by the first heartbeat, which stops it.
                log.warning("worker.database_unavailable", during="heartbeat", error=str(exc))

    async def heartbeat(self) -> None:
        """Renew leases; stop attempts that were cancelled or lost their lease."""
        # Attempts whose end is not written yet keep their lease too (an outage keeps them
        # here); any other attempt of this worker is one nobody will end: let it expire.
        ending = (f.attempt_id for f in (*self._finished, *self._writing))
        ids = [*self.running, *(a for a in ending if a is not None)]
        verdicts = await self.store.heartbeat(self.name, self.settings.lease_seconds, ids)
        for attempt_id, verdict in verdicts.items():
            item = self.running.get(attempt_id)
            if item is None:
                continue
            if verdict == "cancelling":
                item.ctx.request_stop(StopReason.CANCEL)
            elif verdict == "lost":
                log.warning("job.lease_lost", job_id=item.ctx.public_id, attempt_id=attempt_id)
                item.ctx.request_stop(StopReason.LOST)
                item.task.cancel()

    async def _reaper_loop(self) -> None:
        # What this loop has seen of the database: no outage it missed counts against a lease.
        watch = ReaperWatch(self.settings.reaper_seconds)
        while True:
            await asyncio.sleep(self.settings.reaper_seconds)
            try:
                done = await self.store.reap(
                    cancel_grace_seconds=self.settings.cancel_grace_seconds,
                    retry_base=self.settings.retry_base_seconds,
                    retry_cap=self.settings.retry_cap_seconds,
                    watch=watch,
                )
            except _REAPER_ERRORS as exc:
                log.warning("reaper.failed", error=str(exc))
                continue
            if done:
                log.info("reaper.acted", **done)

    async def _flush_loop(self) -> None:
        failures = 0
        while True:
            await self._flush.wait()
            self._flush.clear()
            if self._finished:
                # Shielded: stopping the loop at shutdown must not lose a batch being written.
                batch = self._writing = self._drain()
                self._flushing = asyncio.ensure_future(self.store.finish(batch))
                try:
                    await asyncio.shield(self._flushing)
                except Exception as exc:
                    if not is_unavailable(exc):  # refused: must not sink the batch or the loop
                        log.error("worker.finish_batch_refused", error=str(exc), size=len(batch))
                        await self._finish_one_by_one(batch)
                        self._writing = []
                        continue
                    # Keep the outcomes and write them once the database is back; fenced by
                    # attempt, a write that comes too late becomes an ignored event.
                    self._finished[:0] = batch
                    failures = await self._unavailable("finish", exc, failures)
                    self._flush.set()
                    continue
                self._writing = []
                failures = 0
                # Each slot was freed, and the claim loop woken, when its job ended (``_run``);
                # but that claim still counted these jobs as running, so a job held back by a
                # fleet-wide limit (its kind's, its requester's) may start only now.
                if self.settings.concurrency > len(self.running):
                    self._wake.set()

    async def _finish_one_by_one(self, batch: list[Finish]) -> None:
        """Write a refused batch's outcomes one at a time, so one bad row costs only itself.

        An outcome refused on its own is dropped: its attempt is no longer renewed by the
        heartbeat, so the lease expires and the reaper settles the job by the usual rules.
        """
        for finish in batch:
            try:
                await self.store.finish([finish])
            except Exception as exc:
                if is_unavailable(exc):
                    self._finished.append(finish)  # kept until written: the outage path retries
                    self._flush.set()
                    continue
                log.error(
                    "worker.finish_refused",
                    job_id=finish.job_id,
                    attempt_id=finish.attempt_id,
                    outcome=finish.outcome,
                    error=str(exc),
                )

    def _drain(self) -> list[Finish]:
        batch, self._finished = self._finished, []
        return batch

    # -- one job --------------------------------------------------------------------------

    def _start(self, claim: Claim) -> None:
        spec = self.registry.get(claim.kind)  # once per job: the claim's kind, to its end
        ctx = Context(
            claim,
            store=self.store,
            budget=self.budget.tighten(spec.budget),
            assets_dir=self.assets_dir,
            # Its writes wait out an outage of any length: once the database is back, the attempt
            # is still current (the reaper's grace) or the heartbeat's "lost" stops it.
            write_within=math.inf,
            park_after=self.settings.park_after_seconds,
            poll_seconds=self.settings.poll_seconds,
            retry_safe=spec.retry_safe,
        )
        # The claim's span joins the submitter's trace (the job's traceparent); the task made
        # inside it starts with it as its context, so the attempt's span is its child.
        with tracing.span(
            "errand.claim",
            parent=claim.traceparent,
            job=claim.public_id,
            kind=claim.kind,
            worker=self.name,
            attempt=claim.attempt,
        ):
            task = asyncio.create_task(self._run(spec, ctx), name=f"job:{claim.public_id}")
        self.running[claim.attempt_id] = Running(ctx, spec, task, time.monotonic())
        if self._early_cancels.pop(claim.attempt_id, None) is not None:
            ctx.request_stop(StopReason.CANCEL)

    async def _run(self, spec: Kind, ctx: Context) -> None:
        bind_contextvars(job_id=ctx.public_id, attempt_id=ctx.attempt_id)
        observe.attempt_started(ctx.kind)
        started = time.monotonic()
        finish: Finish | None = None
        try:
            # Budgets, effects in doubt and failures map to outcomes in jobs/runtime/execute.py.
            with tracing.span(
                "errand.attempt", job=ctx.public_id, kind=ctx.kind, attempt=ctx.claim.attempt
            ):
                finish = await execute(
                    spec,
                    ctx,
                    retry_base=self.settings.retry_base_seconds,
                    retry_cap=self.settings.retry_cap_seconds,
                )
        except asyncio.CancelledError:
            # Cancelled by the runtime (shutdown, hard stop, lost lease); when the lease was lost
            # there is nothing left to record.
            if ctx.stop_reason is not StopReason.LOST:
                finish = stopped(spec, ctx)
        except DatabaseUnavailable as exc:
            # The runtime could not write about the job for a whole lease: not the job's fault.
            # Nothing is recorded; the lease expires and the reaper applies its rules.
            log.warning("job.left_to_reaper", job_id=ctx.public_id, error=str(exc))
        finally:
            # The attempt (and its lease) is kept until every thread the handler started has
            # returned: releasing it earlier would let another worker run the job alongside.
            # At the shutdown's bound the worker takes the attempt out of ``running`` and
            # records its end itself (_leave_running); then this ends it no more.
            while ctx.threads_running and ctx.attempt_id in self.running:
                try:
                    await ctx.threads_stopped()
                except asyncio.CancelledError:
                    continue
            if self.running.pop(ctx.attempt_id, None) is not None:
                observe.attempt_ended(
                    ctx.kind, finish.outcome if finish else None, time.monotonic() - started
                )
                if finish is not None:
                    self._finished.append(finish)
                    self._flush.set()
                # The slot is free: claim again now, while the flush loop writes this end,
                # rather than after it (a claim and a finish then run at once, on two
                # connections).
                self._wake.set()
