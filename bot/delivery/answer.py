"""The /summon answer as a live view of its job's state, edited through the interaction's token.

Why: under a burst, every job's thread, progress message, edits and notice share the bot's
global limit of 50 requests/s, and Discord paces thread creation per channel. Edits through an
interaction's webhook token are not counted against the global limit
(https://discord.com/developers/docs/topics/rate-limits#global-rate-limit) and each token has
its own bucket, so the answer shows each state change at once, whatever the queue holds. A token
lives 15 minutes; after that (or after a restart, since the token is kept in memory only and is
never stored), the thread's progress message carries the state, and a terminal state is written
to the answer once more with the bot's token (see :mod:`bot.delivery.loop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import discord

from bot import render
from bot.delivery.discord_io import NO_ANSWER
from bot.render import NO_PINGS
from jobs.transport import JobStore, State, UnknownJob, get_logger

log = get_logger("bot.answers")

# An edit Discord did not make for its own trouble or the network's (after discord.py's own
# retries): tried again, the answer still followed.
_LATER: tuple[type[BaseException], ...] = (discord.DiscordServerError, *NO_ANSWER)

# Discord's interaction tokens are valid for 15 minutes; stop using one a little before.
TOKEN_SECONDS = 14 * 60


@dataclass
class Answer:
    """One job's answer: the interaction that carries its token, and what it shows."""

    job_id: int
    public_id: str
    interaction: discord.Interaction[Any]
    channel_type: int
    shown: State = State.QUEUED
    since: float = field(default_factory=time.monotonic)
    task: asyncio.Task[None] | None = None
    dirty: bool = False

    def live(self, now: float) -> bool:
        return now - self.since < TOKEN_SECONDS


class Answers:
    """Keeps each live /summon answer in step with its job's state."""

    def __init__(
        self,
        store: JobStore,
        record: Callable[[int, State], Awaitable[None]],
        states: Callable[[list[int]], Awaitable[dict[int, str]]],
    ) -> None:
        self.store = store
        self._record = record
        self._states = states
        self._answers: dict[int, Answer] = {}
        self._wake = asyncio.Event()
        self._watcher: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Watch the followed jobs' states (call once the event loop runs)."""
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.create_task(self._watch(), name="errand-answers")

    def wake(self) -> None:
        """Some job changed state (an outbox NOTIFY): look at the followed ones soon."""
        self._wake.set()

    async def _watch(self) -> None:
        # Why a watcher of its own: under a backlog, delivery reaches a job's outbox rows late
        # (oldest first, at the bot's request rate); the answer must not wait for that.
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 1.0)
            self._wake.clear()
            now = time.monotonic()
            for job_id in [j for j, a in self._answers.items() if not a.live(now)]:
                self._answers.pop(job_id, None)
            if not self._answers:
                continue
            try:
                states = await self._states(list(self._answers))
            except Exception as exc:  # the database is away: the next wake tries again
                log.warning("answer.poll_failed", error=repr(exc))
                await asyncio.sleep(1.0)
                continue
            for job_id, state in states.items():
                answer = self._answers.get(job_id)
                if answer is not None and state != answer.shown.value:
                    self.poke(job_id)
            await asyncio.sleep(0.1)  # coalesce a burst of NOTIFYs into one look

    def remember(
        self,
        job_id: int,
        public_id: str,
        interaction: discord.Interaction[Any],
        channel_type: int,
    ) -> None:
        """Follow a job whose answer was just sent (it shows ``queued``)."""
        self._answers[job_id] = Answer(job_id, public_id, interaction, channel_type)
        self._wake.set()  # it may have moved on before it was followed (a worker was idle)

    def live(self, job_id: int) -> bool:
        """Whether this process can still edit the job's answer through its token."""
        answer = self._answers.get(job_id)
        return answer is not None and answer.live(time.monotonic())

    def poke(self, job_id: int) -> None:
        """The job changed: bring its answer up to date soon (one task per job)."""
        answer = self._answers.get(job_id)
        if answer is None:
            return
        if not answer.live(time.monotonic()):
            self._answers.pop(job_id, None)
            return
        answer.dirty = True
        if answer.task is None or answer.task.done():
            answer.task = asyncio.create_task(self._update(answer), name=f"answer:{job_id}")

    async def _update(self, answer: Answer) -> None:
        while answer.dirty:
            answer.dirty = False
            try:
                job = await self.store.get(answer.public_id)
            except UnknownJob:
                self._answers.pop(answer.job_id, None)
                return
            except Exception as exc:  # the database is away: the next poke tries again
                log.warning("answer.read_failed", job_id=answer.public_id, error=repr(exc))
                return
            if job.state == answer.shown:
                continue
            text = render.answer(job.public_id, job.kind, job.state, answer.channel_type)
            try:
                await answer.interaction.edit_original_response(
                    content=text, allowed_mentions=NO_PINGS
                )
            except _LATER as exc:
                # Discord's trouble or the network's (after discord.py's own retries), not a
                # refusal: still followed, the watcher's next look sees the answer behind its
                # job and tries again.
                log.info("answer.edit_failed", job_id=answer.public_id, error=repr(exc))
                return
            except discord.HTTPException as exc:
                # Expired or deleted: the progress message and delivery's fallback show it.
                log.info("answer.edit_failed", job_id=answer.public_id, status=exc.status)
                self._answers.pop(answer.job_id, None)
                return
            answer.shown = job.state
            log.debug("answer.edited", job_id=answer.public_id, state=job.state.value)
            if job.state in render.NOTICE_STATES:
                try:
                    await self._record(answer.job_id, job.state)
                except Exception as exc:  # delivery's fallback then writes it once more
                    log.warning("answer.record_failed", job_id=answer.public_id, error=repr(exc))
                self._answers.pop(answer.job_id, None)
                return

    def stop_watching(self) -> list[asyncio.Task[None]]:
        """Stop watching job states; the edits still under way, to finish or cancel (an edit's
        task ends on its own once its answer shows the latest state). Their answers stay
        followed, so delivery does not edit them too, until :meth:`forget_all`."""
        if self._watcher is not None:
            self._watcher.cancel()
        return [a.task for a in self._answers.values() if a.task is not None and not a.task.done()]

    def forget_all(self) -> None:
        for answer in self._answers.values():
            if answer.task is not None:
                answer.task.cancel()
        self._answers.clear()
