"""The delivery loop: one actor per job with work to do, woken by the database.

Nothing here runs inside an interaction handler. Each job with work to do gets one actor task
that runs rounds (:mod:`bot.delivery.round`) until the job is finished and delivered. Rounds are
woken by ``NOTIFY errand_outbox`` / ``errand_progress`` (with polling as the fallback), so
workers on other hosts need no link to the bot. Actors are independent, so one bad destination
never holds up another job; a round that fails is tried again with backoff.

A stop sends nothing new; requests Discord has not answered yet get ``delivery_drain_seconds``
to be answered and recorded, so a deploy sends nothing twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from typing import Any

import asyncpg
import discord

from bot import render
from bot.delivery.answer import Answers
from bot.delivery.bindings import Bindings
from bot.delivery.discord_io import Turns
from bot.delivery.followed import Followed
from bot.delivery.notices import Notices
from bot.delivery.progress import ProgressMessage
from bot.delivery.questions import QuestionMessages
from bot.delivery.round import TRANSIENT, Round
from bot.delivery.thread import Threads
from bot.errors import BindingPending, Stopping
from bot.settings import BotSettings
from jobs.transport import UNAVAILABLE, JobStore, Outbox, Registry, UnknownJob, backoff, get_logger

log = get_logger("bot.delivery")

# Errors after which the listener or a lookup is simply tried again: the database unavailable
# or refusing a statement.
_DATABASE: tuple[type[BaseException], ...] = (*UNAVAILABLE, asyncpg.PostgresError)


class Delivery:
    """Delivers every Discord job's notices and keeps its messages current."""

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
        self.pool: asyncpg.Pool = store.pool
        self.outbox = outbox
        self.settings = settings
        self.dsn = dsn
        self.followed: dict[int, Followed] = {}
        self.ids: dict[str, int] = {}  # public id -> job id, for progress NOTIFYs
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncpg.Connection | None = None
        self._lookups: set[asyncio.Task[None]] = set()
        self._stopped = asyncio.Event()  # set once by stop(): nothing new starts after it
        # The silent jobs shown so far, by job id (public id, last heartbeat): each is poked
        # once per silence (a worker heard from again and silent anew is a new silence).
        self._silent: dict[int, tuple[str, datetime]] = {}
        self.stats = {"edits": 0, "posts": 0, "notices": 0, "failures": 0}
        self.turns = Turns(settings.request_rate())
        self.bindings = Bindings(self.pool)
        self.answers = Answers(client, self.turns, self.bindings, self.pool)
        self.round = Round(
            outbox=outbox,
            bindings=self.bindings,
            threads=Threads(client, self.turns, self.bindings),
            progress=ProgressMessage(
                client,
                self.turns,
                bindings=self.bindings,
                outbox=outbox,
                registry=registry,
                settings=settings,
                stopped=self._stopped,
                stats=self.stats,
            ),
            notices=Notices(client, self.turns, self.stats),
            questions=QuestionMessages(client, self.turns, self.stats),
            answers=self.answers,
            settings=settings,
            stats=self.stats,
        )

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start listening and delivering (call from ``setup_hook``)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="errand-delivery")
        self.answers.start()

    async def stop(self) -> None:
        """Stop delivering. Nothing new is sent; requests Discord has not answered yet get
        ``delivery_drain_seconds`` to be answered and recorded (a deploy sends nothing twice).
        Notices not sent are handed back at once; those still unanswered at the end stay leased
        until their lease runs out, and their resend carries the same nonce."""
        self._stopped.set()
        self.turns.close()  # a round waiting for its turn ends now (Stopping)
        for followed in self.followed.values():
            followed.hear(moved=True)  # a round pausing between edits too
        busy = self.answers.stop_watching()
        busy += [f.task for f in self.followed.values() if f.in_round and f.task is not None]
        actors = [f.task for f in self.followed.values() if f.task is not None]
        tasks = [t for t in [self._task, *actors, *busy] if t is not None]
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
            with contextlib.suppress(*_DATABASE):
                await self.bindings.release_all(self.outbox.owner)
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
                await self._show_silent()
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

    async def _show_silent(self) -> None:
        """Re-render the jobs whose worker went silent (a SIGKILL, a lost host): nothing else
        wakes them until the reaper acts, a lease later, and until then their progress message
        would show them running as if all were well (bot.render.silent_since). Each silence is
        shown once; a job that is no longer silent (heard from again, or ended) is rendered
        once more, so the warning does not outlive it."""
        silent = await self.outbox.silent_jobs(render.SILENT_AFTER.total_seconds())
        shown, self._silent = (
            self._silent,
            {s.job_id: (s.public_id, s.heartbeat_at) for s in silent},
        )
        for job_id, (public_id, heard) in self._silent.items():
            if shown.get(job_id, (public_id, None))[1] != heard:
                self.poke(job_id, public_id)
        for job_id, (public_id, _) in shown.items():
            if job_id not in self._silent:
                self.poke(job_id, public_id)

    async def _listen(self) -> None:
        if self._listener is not None and not self._listener.is_closed():
            return
        self._listener = None
        try:
            # A plain connection: LISTEN payloads are text, no codecs needed.
            listener = self._listener = await asyncpg.connect(self.dsn)
            await listener.add_listener(Outbox.CHANNEL, self._on_outbox)
            await listener.add_listener(Outbox.PROGRESS_CHANNEL, self._on_progress)
        except _DATABASE as exc:
            log.warning("delivery.listen_failed", error=str(exc))  # polling still works
            if self._listener is not None:
                with contextlib.suppress(Exception):
                    self._listener.terminate()
                self._listener = None

    def _on_outbox(self, *_: Any) -> None:
        self._wake.set()
        self.answers.wake()

    def _on_progress(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        public_id = str(payload)
        job_id = self.ids.get(public_id)
        if job_id is not None:
            self._hear(job_id, public_id, moved=False)
        else:
            task = asyncio.create_task(self._poke_by_public_id(public_id))
            self._lookups.add(task)
            task.add_done_callback(self._lookups.discard)

    async def _poke_by_public_id(self, public_id: str) -> None:
        try:
            found = await self.bindings.partition_of(public_id)
        except _DATABASE:
            return  # the poll loop finds the job's notices anyway
        if found is not None and self._owns(found[1]):
            self._hear(found[0], public_id, moved=False)

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
        """Something happened to this job (it was summoned, a request was made, a notice came
        due): (re)render it and deliver its notices soon. (Its /summon answer follows state
        changes on its own: :meth:`Answers.wake` on every outbox NOTIFY.)"""
        self._hear(job_id, public_id, moved=True)

    def _hear(self, job_id: int, public_id: str, *, moved: bool) -> None:
        if self._stopped.is_set():
            return
        self.ids[public_id] = job_id
        followed = self.followed.get(job_id)
        if followed is None:
            followed = self.followed[job_id] = Followed(job_id, public_id)
        followed.hear(moved=moved)
        if followed.task is None:
            followed.task = asyncio.create_task(self._actor(followed), name=f"deliver:{public_id}")

    async def _actor(self, followed: Followed) -> None:
        errors = 0
        try:
            while not self._stopped.is_set():
                followed.listen()
                try:
                    finished = await self._drained_round(followed)
                    errors = 0
                except BindingPending:
                    if self._stopped.is_set():
                        return
                    await asyncio.sleep(0.2)
                    followed.hear(moved=True)
                    continue
                except UnknownJob:
                    return  # pruned meanwhile: nothing left to show
                except Stopping:
                    return  # the round's unsent notices are handed back
                except Exception as exc:
                    # Transient (network, database, Discord 5xx) or a bug: log, back off, try
                    # again a few times; leased notices come back through the poll loop anyway.
                    errors += 1
                    log.warning(
                        "delivery.round_failed",
                        job_id=followed.public_id,
                        error=repr(exc),
                        exc_info=not isinstance(exc, TRANSIENT),
                    )
                    if errors >= 5 or self._stopped.is_set():
                        return
                    await asyncio.sleep(backoff(errors + 1, base=0.5, cap=10.0, jitter=False))
                    followed.hear(moved=True)
                    continue
                if finished or self._stopped.is_set():
                    return
                await followed.news.wait()
        finally:
            followed.task = None
            if followed.news.is_set() and not self._stopped.is_set():
                # News arrived as it ended: another actor takes over.
                followed.task = asyncio.create_task(
                    self._actor(followed), name=f"deliver:{followed.public_id}"
                )
            else:
                self.followed.pop(followed.job_id, None)
                self.ids.pop(followed.public_id, None)

    async def _drained_round(self, followed: Followed) -> bool:
        """A round that :meth:`stop` lets finish (within ``delivery_drain_seconds``)."""
        followed.in_round = True
        try:
            return await self.round.run(followed)
        finally:
            followed.in_round = False
