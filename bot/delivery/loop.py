"""Outbox delivery to Discord: the job's thread, its one progress message and its notices.

Nothing here runs inside an interaction handler. Each job with work to do gets one actor task
that, each round, leases the job's pending outbox rows, reads the job as it is *now*, makes sure
the thread and the progress message exist, edits the message to the current state (coalesced:
stale states are never replayed, only the latest is shown), then posts one notice per
notice-worthy transition and records the Discord message id. Rounds are woken by
``NOTIFY errand_outbox`` / ``errand_progress`` (with polling as the fallback), so workers on
other hosts need no link to the bot.

Exactly once: the outbox row is marked delivered with the message id; a notice is sent with a
nonce derived from the row (``enforce_nonce``), so a resend after a crash between Discord's
answer and our write returns the message already made instead of a second one. Failures (thread
deleted, permission removed) retry with backoff and are then dead-lettered; actors are
independent, so one bad destination never holds up another job.

This module is the loop: the actors, their rounds and the ``discord_binding`` rows. The
requests themselves are in ``bot.delivery.discord_io``, and the order and pace of requests and
edits in ``bot.delivery.pacer``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from datetime import UTC, datetime
from typing import Any

import asyncpg
import discord

from bot import render
from bot.delivery.answer import Answers
from bot.delivery.discord_io import FORUMS, NO_ANSWER, THREADABLE, DiscordIO, describe
from bot.delivery.pacer import EDIT, SETUP, TERMINAL_EDIT, edit_interval, edit_wait
from bot.errors import BindingPending, Stopping
from bot.metrics import discord_retry, notice_dead_lettered, notice_delivered
from bot.queries import sql
from bot.settings import BotSettings
from jobs.transport import (
    TERMINAL,
    UNAVAILABLE,
    JobStatus,
    JobStore,
    JobView,
    Notice,
    Outbox,
    Registry,
    State,
    UnknownJob,
    backoff,
    get_logger,
)

log = get_logger("bot.delivery")

# Errors after which a round or the listener is simply tried again: the database unavailable
# (the one list, jobs.engine.db.UNAVAILABLE) or refusing a statement.
_TRANSIENT: tuple[type[BaseException], ...] = (*UNAVAILABLE, asyncpg.PostgresError)
_TRANSIENT_ROUND: tuple[type[BaseException], ...] = (
    *_TRANSIENT,
    *NO_ANSWER,
    discord.DiscordServerError,
)


NOTICE_TOPIC = "transition"
"""What every notice is about (the ``topic`` label of the notice metrics)."""


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _age(created_at: datetime) -> float:
    return (datetime.now(UTC) - created_at).total_seconds()


class Delivery:
    """Delivers every Discord job's outbox rows and keeps its progress message current."""

    def __init__(
        self,
        client: discord.Client,
        *,
        store: JobStore,
        outbox: Outbox,
        registry: Registry,
        settings: BotSettings,
        dsn: str,
    ) -> None:
        self.store = store
        self.pool: asyncpg.Pool = store.pool
        self.outbox = outbox
        self.registry = registry
        self.settings = settings
        self.dsn = dsn
        self.actors: dict[int, asyncio.Task[None]] = {}
        self.dirty: dict[int, asyncio.Event] = {}
        self.ids: dict[str, int] = {}  # public id -> job id, for progress NOTIFYs
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncpg.Connection | None = None
        self._last_edit: dict[int, float] = {}
        self._lookups: set[asyncio.Task[None]] = set()
        self._in_round: set[int] = set()  # job ids whose actor is in a round (stop drains them)
        self._stopped = asyncio.Event()  # set once by stop(): nothing new starts after it
        self.discord = DiscordIO(client, settings.request_rate())
        self.answers = Answers(store, self._record_answer, self._job_states)
        # This process, as the owner of render leases.
        self.name = outbox.owner
        self.stats = {"edits": 0, "posts": 0, "notices": 0, "failures": 0}

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start listening and delivering (call from ``setup_hook``)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="errand-delivery")
        self.answers.start()

    async def stop(self) -> None:
        """Stop delivering. Nothing new is sent; requests Discord has not answered yet get
        ``delivery_drain_seconds`` to be answered and recorded (a deploy sends nothing twice).
        Rows not sent are handed back at once; rows still unanswered at the end stay leased
        until their lease runs out, and their resend carries the same nonce."""
        self._stopped.set()
        self.discord.close()  # a round waiting for its turn ends now (Stopping)
        for event in self.dirty.values():
            event.set()  # a round pausing between edits too
        busy = self.answers.stop_watching()
        busy += [task for job_id, task in self.actors.items() if job_id in self._in_round]
        tasks = [t for t in [self._task, *self.actors.values(), *busy] if t is not None]
        try:
            for task in tasks:
                if task not in busy:  # idle: waiting for a change, a retry or a backoff
                    task.cancel()
            if busy:
                await asyncio.wait(busy, timeout=self.settings.delivery_drain_seconds)
        finally:  # also when the caller is cancelled meanwhile
            for task in tasks:
                task.cancel()
            self.answers.forget_all()
            await asyncio.gather(*tasks, return_exceptions=True)
            with contextlib.suppress(*_TRANSIENT):
                await self.pool.execute(sql("binding_release_render"), self.name)
            if self._listener is not None:
                with contextlib.suppress(Exception):
                    await self._listener.close()

    async def _run(self) -> None:
        await self._listen()
        while not self._stopped.is_set():
            self._wake.clear()
            try:
                for due in await self.outbox.due_jobs(500):
                    self.poke(due.job_id, due.public_id)
            except Exception as exc:
                # No error ends the delivery loop: an outage (any of UNAVAILABLE, e.g. asyncpg's
                # "another operation is in progress" after a restart) is retried next round.
                log.warning(
                    "delivery.poll_failed",
                    error=f"{type(exc).__name__}: {exc}"[:300],
                    unavailable=isinstance(exc, UNAVAILABLE),
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.settings.delivery_poll_seconds)

    async def _listen(self) -> None:
        if self._listener is not None and not self._listener.is_closed():
            return
        self._listener = None
        try:
            # A plain connection: LISTEN payloads are text, no codecs needed.
            listener = self._listener = await asyncpg.connect(self.dsn)
            await listener.add_listener(Outbox.CHANNEL, self._on_outbox)
            await listener.add_listener(Outbox.PROGRESS_CHANNEL, self._on_progress)
        except _TRANSIENT as exc:
            log.warning("delivery.listen_failed", error=str(exc))  # polling still works
            if self._listener is not None:
                with contextlib.suppress(Exception):
                    self._listener.terminate()
                self._listener = None

    def _on_outbox(self, *_: Any) -> None:
        self._wake.set()
        self.answers.wake()

    async def _job_states(self, job_ids: list[int]) -> dict[int, str]:
        rows = await self.pool.fetch(sql("job_states_by_id"), job_ids)
        return {r["id"]: r["state"] for r in rows}

    def _on_progress(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        public_id = str(payload)
        job_id = self.ids.get(public_id)
        if job_id is not None:
            self.poke(job_id, public_id)
        else:
            task = asyncio.create_task(self._poke_by_public_id(public_id))
            self._lookups.add(task)
            task.add_done_callback(self._lookups.discard)

    async def _poke_by_public_id(self, public_id: str) -> None:
        try:
            row = await self.pool.fetchrow(sql("binding_by_public_id"), public_id)
        except _TRANSIENT:
            return  # the poll loop finds the job's rows anyway
        if row is not None and self._owns(row["partition"]):
            self.poke(row["job_id"], public_id)

    def _owns(self, partition: int) -> bool:
        """Whether this process delivers the jobs of ``partition`` (its shards' guilds); every
        process hears every job's progress NOTIFY."""
        if self.outbox.partition is None:
            return True
        count, ids = self.outbox.partition
        return partition % count in ids

    # -- actors ---------------------------------------------------------------------------

    def remember_answer(
        self,
        job_id: int,
        public_id: str,
        interaction: discord.Interaction[Any],
        channel_type: int,
    ) -> None:
        """Keep this job's /summon answer showing its state (see :mod:`bot.delivery.answer`)."""
        self.answers.remember(job_id, public_id, interaction, channel_type)

    def poke(self, job_id: int, public_id: str) -> None:
        """Something changed for this job: (re)render it and deliver its rows soon. (Its /summon
        answer follows state changes on its own: :meth:`Answers.wake` on every outbox NOTIFY.)"""
        if self._stopped.is_set():
            return
        self.ids[public_id] = job_id
        self.dirty.setdefault(job_id, asyncio.Event()).set()
        if job_id not in self.actors:
            self.actors[job_id] = asyncio.create_task(
                self._actor(job_id, public_id), name=f"deliver:{public_id}"
            )

    async def _actor(self, job_id: int, public_id: str) -> None:
        event = self.dirty[job_id]
        errors = 0
        try:
            while not self._stopped.is_set():
                event.clear()
                try:
                    finished = await self._drained_round(job_id, public_id)
                    errors = 0
                except BindingPending:
                    if self._stopped.is_set():
                        return
                    await asyncio.sleep(0.2)
                    event.set()
                    continue
                except UnknownJob:
                    return  # pruned meanwhile: nothing left to show
                except Stopping:
                    return  # the round's unsent rows are handed back
                except Exception as exc:
                    # Transient (network, database, Discord 5xx) or a bug: log, back off, try
                    # again a few times; leased rows come back through the poll loop anyway.
                    errors += 1
                    log.warning(
                        "delivery.round_failed",
                        job_id=public_id,
                        error=repr(exc),
                        exc_info=not isinstance(exc, _TRANSIENT_ROUND),
                    )
                    if errors >= 5 or self._stopped.is_set():
                        return
                    await asyncio.sleep(backoff(errors + 1, base=0.5, cap=10.0, jitter=False))
                    event.set()
                    continue
                if finished or self._stopped.is_set():
                    return
                await event.wait()
        finally:
            self.actors.pop(job_id, None)
            if event.is_set() and not self._stopped.is_set():
                self.actors[job_id] = asyncio.create_task(
                    self._actor(job_id, public_id), name=f"deliver:{public_id}"
                )
            else:
                self.dirty.pop(job_id, None)
                self.ids.pop(public_id, None)
                self._last_edit.pop(job_id, None)

    async def _drained_round(self, job_id: int, public_id: str) -> bool:
        """A round that :meth:`stop` lets finish (within ``delivery_drain_seconds``)."""
        self._in_round.add(job_id)
        try:
            return await self._round(job_id, public_id)
        finally:
            self._in_round.discard(job_id)

    async def _round(self, job_id: int, public_id: str) -> bool:
        """One delivery round; True when the job is finished and fully delivered."""
        # Take the job's render lease first: only its owner claims the job's rows, so two
        # bot processes never race for them; then read the job after claiming its rows, so
        # the progress message is at least as new as every notice that follows it.
        await self._ensure_binding(job_id, public_id)
        taken = await self.pool.fetchrow(
            sql("binding_take_render"), job_id, self.name, self.settings.delivery_lease_seconds
        )
        if taken is None:  # another bot process renders this job; its rows wait for it
            return True
        rows = await self.outbox.claim(job_id)
        status = await self.store.status(public_id)
        job = status.job
        binding = taken
        pending = list(rows)
        try:
            binding = await self._ensure_thread(status, binding)
            binding = await self._render(status, binding)
            while pending:
                row = pending[0]
                external = binding["progress_message_id"]
                if row.to_state in render.NOTICE_STATES:
                    external = await self._notice(status, row, binding)
                if not await self.outbox.done(row, external):
                    # Another process took these rows over (we stalled past the lease); it
                    # delivers them, and the nonce makes our send and its send one message.
                    log.warning("delivery.lease_lost", job_id=public_id, outbox_id=row.id)
                    return True
                notice_delivered(NOTICE_TOPIC, _age(row.at))
                pending.pop(0)
        except Stopping:
            # The bot is stopping before these were sent: due again at once, for the next bot.
            await self.outbox.release(pending, 0.0)
            raise
        except _TRANSIENT_ROUND as exc:
            # Transient (Discord 5xx, network, database): try again soon, no attempt counted.
            await self.outbox.release(pending, 1.0)
            if isinstance(exc, NO_ANSWER):  # 5xx answers are counted where they arrive (trace)
                discord_retry("network")
            raise
        except discord.HTTPException as exc:
            if exc.status != 429:
                return await self._refused(job, public_id, pending, exc)
            # Still rate limited after discord.py's own retries: Discord is saying "later",
            # not "no". Hand the rows back uncounted (never a dead letter) and try again later.
            await self.outbox.release(pending, self.settings.delivery_rate_limited_seconds)
            log.warning("delivery.rate_limited", job_id=public_id)
            return False
        except Exception as exc:  # a bug: retry with backoff, then dead-letter
            return await self._refused(job, public_id, pending, exc)
        if job.state in render.NOTICE_STATES and binding["progress_state"] == job.state.value:
            # The progress message shows how it ended (unknown included): so does the answer.
            await self._settle_answer(status, binding)
        return job.state in TERMINAL and binding["progress_state"] in TERMINAL

    async def _refused(
        self, job: JobView, public_id: str, pending: list[Notice], exc: Exception
    ) -> bool:
        """A refusal (403/404/400) or a bug: count the attempt; retry with backoff, then
        dead-letter. True when nothing is left for this job's actor to do."""
        self.stats["failures"] += 1
        error = describe(exc) if isinstance(exc, discord.HTTPException) else repr(exc)
        log.warning(
            "delivery.failed",
            job_id=public_id,
            error=error,
            exc_info=not isinstance(exc, discord.HTTPException),
        )
        for row in pending:
            dead = await self.outbox.failed(row, error)
            if dead:
                notice_dead_lettered(NOTICE_TOPIC)
                log.warning("delivery.dead_lettered", job_id=public_id, outbox_id=row.id)
        return not pending or job.state in TERMINAL  # the poll loop retries when due

    async def _record_answer(self, job_id: int, state: State) -> None:
        await self.pool.execute(sql("binding_set_answer_state"), job_id, state.value)

    async def _settle_answer(self, status: JobStatus, binding: asyncpg.Record) -> None:
        """Show a finished job's end on its /summon answer once, with the bot's token, when
        no live interaction token did (a restart, a job longer than 15 minutes)."""
        job = status.job
        if (
            binding["anchor_message_id"] is None
            or binding["answer_state"] == job.state.value
            or self.answers.live(job.id)
        ):
            return
        # Read again: the answer's own watcher may have shown the end since this round began.
        fresh = await self.pool.fetchrow(sql("binding_get"), job.id)
        if fresh is not None and fresh["answer_state"] == job.state.value:
            return
        text = render.answer(job.public_id, job.kind, job.state, binding["channel_type"])
        if await self.discord.edit_answer(
            int(binding["channel_id"]), int(binding["anchor_message_id"]), text
        ):
            await self._record_answer(job.id, job.state)

    # -- thread and progress message ------------------------------------------------------

    async def _write(self, name: str, *args: Any) -> asyncpg.Record:
        """Run a binding write that returns the binding (it exists: made before delivery)."""
        record = await self.pool.fetchrow(sql(name), *args)
        if record is None:
            raise LookupError(f"{name}: no binding for job {args[0]}")
        return record

    async def _ensure_binding(self, job_id: int, public_id: str) -> None:
        """Make sure the job has a binding; raise BindingPending while its /summon answer may
        be pending."""
        binding = await self.pool.fetchrow(sql("binding_get"), job_id)
        if binding is not None and (
            binding["anchor_message_id"]
            or binding["thread_id"]
            or binding["channel_type"] not in THREADABLE
        ):
            return
        # Only an unfinished binding needs the job (its age and origin); a binding cascades
        # away with its job, so a pruned job still ends here in UnknownJob.
        job = await self.store.get(public_id)
        age = (datetime.now(UTC) - job.created_at).total_seconds()
        if age < self.settings.anchor_wait_seconds:
            # the /summon handler records its answer message right after answering
            raise BindingPending
        if binding is not None:
            return
        # The bot stopped between submit and recording the answer: bind from the origin.
        origin = job.origin
        await self._write(
            "binding_insert",
            job.id,
            origin.get("guild_id"),
            str(origin["channel_id"]),
            int(origin.get("channel_type") or 0),
            None,
        )

    async def _ensure_thread(self, status: JobStatus, binding: asyncpg.Record) -> asyncpg.Record:
        if binding["thread_id"]:
            return binding
        job = status.job
        ctype = binding["channel_type"]
        channel_id = int(binding["channel_id"])
        name = f"{job.public_id} · {render.code(str(job.origin.get('task') or job.kind), 80)}"
        if ctype in THREADABLE:
            thread_id = await self.discord.start_thread(
                channel_id,
                ctype,
                int(binding["guild_id"]) if binding["guild_id"] else None,
                binding["anchor_message_id"],
                name=name,
                anchor_text=f"Job `{job.public_id}` ({job.kind})",
                anchor_nonce=f"a{job.public_id}",
            )
        elif ctype in FORUMS:
            view = self._progress_view(status)
            post_id, message_id = await self.discord.start_forum_post(
                channel_id, view, name=name, public_id=job.public_id
            )
            await self.pool.execute(sql("binding_set_thread"), job.id, post_id)
            self.stats["posts"] += 1
            return await self._write(
                "binding_set_progress_message",
                job.id,
                message_id,
                view.state.value,
                _hash(view.key),
            )
        else:  # a DM, a thread it was summoned in, or any other text channel: post right there
            thread_id = str(channel_id)
        return await self._write("binding_set_thread", job.id, thread_id)

    def _progress_view(self, status: JobStatus) -> render.Progress:
        job = status.job
        spec = self.registry.get(job.kind) if job.kind in self.registry else None
        return render.progress(
            status,
            task=str(job.origin.get("task") or ""),
            may_resolve=bool(spec and spec.requester_may_resolve),
        )

    async def _post_progress(
        self, status: JobStatus, binding: asyncpg.Record, view: render.Progress, *, nonce: str
    ) -> asyncpg.Record:
        job = status.job
        message_id = await self.discord.post_progress(
            binding["thread_id"],
            view,
            public_id=job.public_id,
            nonce=nonce,
            priority=TERMINAL_EDIT if view.state in TERMINAL else SETUP,
        )
        self.stats["posts"] += 1
        self._last_edit[job.id] = time.monotonic()
        return await self._write(
            "binding_set_progress_message",
            job.id,
            message_id,
            view.state.value,
            _hash(view.key),
        )

    async def _render(self, status: JobStatus, binding: asyncpg.Record) -> asyncpg.Record:
        """Show the current state on the progress message (post it first if there is none)."""
        job = status.job
        view = self._progress_view(status)
        if binding["progress_message_id"] is None:
            return await self._post_progress(status, binding, view, nonce=f"p{job.public_id}")
        if binding["progress_state"] in TERMINAL or binding["progress_hash"] == _hash(view.key):
            return binding  # never a state after the terminal one; never an empty edit
        if view.state in TERMINAL:
            await self.discord.turns.wait(TERMINAL_EDIT)
        else:
            # Coalesce: at most one edit per interval per message, and a turn in the bot's
            # queue; the state shown is read after both waits, so a backlog never replays
            # stale states.
            await self._pace(job.id, job.public_id, binding)
            status = await self.store.status(job.public_id)
            if status.job.state in TERMINAL:
                # It ended during the pause: its last edit goes first, not behind progress.
                await self.discord.turns.wait(TERMINAL_EDIT)
            else:
                await self.discord.turns.wait(EDIT)
                status = await self.store.status(job.public_id)
            view = self._progress_view(status)
            if binding["progress_hash"] == _hash(view.key):
                return binding
        edited = await self.discord.edit_progress(
            binding["thread_id"], binding["progress_message_id"], view, public_id=job.public_id
        )
        if not edited:
            # Someone deleted the progress message: post it again (a fresh nonce).
            log.info("delivery.progress_reposted", job_id=job.public_id)
            return await self._post_progress(
                status, binding, view, nonce=f"r{job.public_id}{int(time.time()) % 10**9}"
            )
        self._last_edit[job.id] = time.monotonic()
        self.stats["edits"] += 1
        updated = await self.pool.fetchrow(
            sql("binding_record_edit"),
            job.id,
            view.state.value,
            _hash(view.key),
            [s.value for s in TERMINAL],
        )
        return updated or binding

    async def _pace(self, job_id: int, public_id: str, binding: asyncpg.Record) -> None:
        interval = edit_interval(
            binding["progress_posted_at"],
            datetime.now(UTC),
            interval=self.settings.edit_interval_seconds,
            old_interval=self.settings.old_message_edit_interval_seconds,
        )
        last = self._last_edit.get(job_id)
        wait = edit_wait(last, interval, time.monotonic())
        event = self.dirty.get(job_id)
        if wait > 0 and event is not None and not event.is_set():
            # Sleep, but wake on news: a terminal state is shown at once, not after the pause.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), wait)
                if self._stopped.is_set():
                    raise Stopping
                if (await self.store.get(public_id)).state in TERMINAL:
                    return
            wait = edit_wait(last, interval, time.monotonic())
        if wait > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), wait)
            if self._stopped.is_set():
                raise Stopping

    # -- notices --------------------------------------------------------------------------

    async def _notice(self, status: JobStatus, row: Notice, binding: asyncpg.Record) -> str:
        job = status.job
        user_id = int(job.origin["user_id"]) if job.origin.get("user_id") else None
        message_id = await self.discord.send_notice(
            binding["thread_id"],
            render.notice(job, row, user_id),
            user_id=user_id,
            # "e": since migration 0009 a notice's id is its event's; a new prefix keeps these
            # nonces from meeting one made from an old outbox row's id ("n") in Discord's window.
            nonce=f"e{row.id}",
        )
        self.stats["notices"] += 1
        log.info("delivery.notice", job_id=job.public_id, state=row.to_state, message_id=message_id)
        return message_id
