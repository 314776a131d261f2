"""The /summon answer as a live view of its job's state: the only module that edits it.

Why: under a burst, every job's thread, progress message, edits and notice share the bot's
global limit of 50 requests/s, and Discord paces thread creation per channel. Edits through an
interaction's webhook token are not counted against the global limit
(https://discord.com/developers/docs/topics/rate-limits#global-rate-limit) and each token has
its own bucket, so the answer shows each state change at once, whatever the queue holds. A token
lives 15 minutes; after that (or after a restart, since the token is kept in memory only and is
never stored), the thread's progress message carries the state, and once the progress message
shows how the job ended, :meth:`Answers.settle` writes that end to the answer with the bot's
token, once (``discord_binding.answer_state`` records what the answer shows).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import discord

from bot import render
from bot.delivery.bindings import Binding, Bindings
from bot.delivery.discord_io import NO_ANSWER, Turns
from bot.delivery.pacer import NOTICE
from bot.queries import sql
from bot.render import NO_PINGS
from jobs.transport import JobView, State, get_logger

log = get_logger("bot.answers")

# An edit Discord did not make for its own trouble or the network's (after discord.py's own
# retries): tried again, the answer still followed.
_LATER: tuple[type[BaseException], ...] = (discord.DiscordServerError, *NO_ANSWER)

# Discord's interaction tokens are valid for 15 minutes; stop using one a little before.
TOKEN_SECONDS = 14 * 60


@dataclass(frozen=True)
class Shown:
    """What an answer says of its job: its state and kind, as ``job_answer_states`` reads them."""

    state: State
    kind: str


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
    want: Shown | None = None
    """The job as the watcher last read it, when the answer does not show that yet."""

    def live(self, now: float) -> bool:
        return now - self.since < TOKEN_SECONDS


class Answers:
    """Keeps each /summon answer in step with its job: through its interaction's token while it
    lives in this process, then its end once with the bot's token."""

    def __init__(
        self, client: discord.Client, turns: Turns, bindings: Bindings, pool: asyncpg.Pool
    ) -> None:
        self.client = client
        self.turns = turns
        self.bindings = bindings
        self.pool = pool
        self._answers: dict[int, Answer] = {}
        # Jobs whose end this process showed through the token, and when: delivery's settle
        # does not edit them again, whatever the binding it read before said.
        self._ended: dict[int, float] = {}
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
            for job_id in [j for j, at in self._ended.items() if now - at > TOKEN_SECONDS]:
                self._ended.pop(job_id, None)
            if not self._answers:
                continue
            asked = list(self._answers)
            try:
                rows = await sql.fetch(self.pool, "job_answer_states", ids=asked)
            except Exception as exc:  # the database is away: the next wake tries again
                log.warning("answer.poll_failed", error=repr(exc))
                await asyncio.sleep(1.0)
                continue
            found = {r["id"]: Shown(State(r["state"]), r["kind"]) for r in rows}
            for job_id in [j for j in asked if j not in found]:
                self._answers.pop(job_id, None)  # pruned meanwhile: nothing left to show
            for job_id, shown in found.items():
                answer = self._answers.get(job_id)
                if answer is not None and shown.state != answer.shown:
                    answer.want = shown
                    self._edit_soon(answer)
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

    def _follows(self, job_id: int) -> bool:
        """Whether this process shows the job's answer through its token, or has shown its
        end that way."""
        answer = self._answers.get(job_id)
        live = answer is not None and answer.live(time.monotonic())
        return live or job_id in self._ended

    def _edit_soon(self, answer: Answer) -> None:
        """Bring the answer up to date soon (one task per answer)."""
        if answer.task is None or answer.task.done():
            answer.task = asyncio.create_task(self._update(answer), name=f"answer:{answer.job_id}")

    async def _update(self, answer: Answer) -> None:
        while (want := answer.want) is not None:
            answer.want = None
            if want.state == answer.shown:
                continue
            text = render.answer(answer.public_id, want.kind, want.state, answer.channel_type)
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
                # Expired or deleted: the progress message and the settle show it.
                log.info("answer.edit_failed", job_id=answer.public_id, status=exc.status)
                self._answers.pop(answer.job_id, None)
                return
            answer.shown = want.state
            log.debug("answer.edited", job_id=answer.public_id, state=want.state.value)
            if want.state in render.NOTICE_STATES:
                self._ended[answer.job_id] = time.monotonic()
                try:
                    await self.bindings.set_answer_state(answer.job_id, want.state)
                except Exception as exc:  # the settle then writes it once more
                    log.warning("answer.record_failed", job_id=answer.public_id, error=repr(exc))
                    self._ended.pop(answer.job_id, None)
                self._answers.pop(answer.job_id, None)
                return

    async def settle(self, job: JobView, binding: Binding) -> None:
        """Show how a job ended (its progress message shows it) on its /summon answer once, with
        the bot's token, when no live interaction token did (a restart, a job longer than 15
        minutes)."""
        if (
            binding.anchor_message_id is None
            or binding.answer_state is job.state
            or self._follows(job.id)
        ):
            return
        text = render.answer(job.public_id, job.kind, job.state, binding.origin.channel_type)
        message = self.client.get_partial_messageable(
            binding.origin.channel_id
        ).get_partial_message(int(binding.anchor_message_id))
        await self.turns.wait(NOTICE)
        try:
            await message.edit(content=text, allowed_mentions=NO_PINGS)
        except (discord.NotFound, discord.Forbidden):
            return  # deleted, or out of reach (archived, no access)
        await self.bindings.set_answer_state(job.id, job.state)

    def stop_watching(self) -> list[asyncio.Task[None]]:
        """Stop watching job states; the edits still under way, to finish or cancel (an edit's
        task ends on its own once its answer shows the latest state). Their answers stay
        followed, so the settle does not edit them too, until :meth:`forget_all`."""
        if self._watcher is not None:
            self._watcher.cancel()
        return [a.task for a in self._answers.values() if a.task is not None and not a.task.done()]

    def forget_all(self) -> None:
        for answer in self._answers.values():
            if answer.task is not None:
                answer.task.cancel()
        self._answers.clear()
