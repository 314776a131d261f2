"""A handler's waits and its mailbox: ``ctx.ask`` (a question), ``ctx.wait_for_message`` and
``ctx.messages`` (follow-ups), ``ctx.sleep`` and ``ctx.sleep_until`` (a time).

A wait for a person first waits in its worker, woken by ``NOTIFY errand_mailbox`` (and a poll,
should a NOTIFY be missed), for up to the park threshold (``park_after``, the worker's
``ERRAND_WORKER_PARK_AFTER_SECONDS``). Past it, the handler parks:
:class:`~jobs.errors.JobParked` unwinds it, the attempt ends ``parked`` and the job is
``waiting``, holding no lease and no slot. A sleep longer than the threshold (and than
:data:`SLEEP_PARKS_AFTER`) does the same: it sleeps in its worker up to the threshold, then
parks until its time. The answer, the message or the timer queues the job; the next attempt
replays the handler from its last checkpoint, and the wait it parked at returns at once (a sleep
after the rest of its time).

Which wait is which, on a replay: every wait is numbered from the handler's last checkpoint (the
first is 1), and a park records its number. Replaying, a wait numbered below the parked one is
over (a sleep returns at once, a message wait returns what is in the mailbox at once), the
parked one returns what came, later ones are new. A question is found by its key, whichever
attempt asked it. The resume contract, for kind authors: docs/kinds.md, "Questions, messages
and waits".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import jobs.limits as limits
from jobs.engine.attempt_mail import AttemptMail
from jobs.engine.mail import (
    MAX_CHOICE,
    MAX_CHOICES,
    MAX_KEY,
    MAX_QUESTION,
    LastPark,
    Message,
    Question,
    QuestionStatus,
    Wait,
    WaitFor,
)
from jobs.errors import JobParked, NoAnswer
from jobs.runtime.attempt import Attempt, StopReason

T = TypeVar("T")

SLEEP_PARKS_AFTER = 1.0
"""Seconds a wait must have left to park, whatever the threshold: a shorter one costs less in
its worker than a park and a replay."""

NO_DEFAULT: Any = object()
"""``ctx.ask`` without a default: no answer in time raises :class:`~jobs.errors.NoAnswer`."""


class Answer(str):
    """An answer to ``ctx.ask``: its words (it is a ``str``), who gave it (``by``: a
    requester id such as ``discord:42``, or ``cli``) and, for a choice, its index."""

    by: str | None
    choice: int | None

    def __new__(cls, text: str, by: str | None = None, choice: int | None = None) -> Answer:
        answer = super().__new__(cls, text)
        answer.by = by
        answer.choice = choice
        return answer


def describe(wait: Wait) -> str:
    """A park's reason, as the timeline and the progress message say it."""
    if wait.wait_for is WaitFor.QUESTION:
        return f"waiting for an answer to {wait.key!r}"
    if wait.wait_for is WaitFor.MESSAGE:
        return "waiting for a message"
    assert wait.until is not None
    return f"waiting until {wait.until.isoformat(timespec='seconds')}"


def _checked_question(
    key: str, question: str, choices: Sequence[str] | None, timeout: float | None
) -> tuple[str, ...]:
    """The choices, once the question's parts are within bounds. Raises ValueError."""
    if not key or len(key) > MAX_KEY or not limits.is_text(key):
        raise ValueError(f"a question's key is 1 to {MAX_KEY} characters")
    if not question.strip() or len(question) > MAX_QUESTION or not limits.is_text(question):
        raise ValueError(f"a question is 1 to {MAX_QUESTION} characters")
    offered = tuple(choices or ())
    if len(offered) > MAX_CHOICES or len(set(offered)) != len(offered):
        raise ValueError(f"a question has at most {MAX_CHOICES} choices, each once")
    if any(not c.strip() or len(c) > MAX_CHOICE or not limits.is_text(c) for c in offered):
        raise ValueError(f"a choice is 1 to {MAX_CHOICE} characters")
    if timeout is not None and not timeout > 0:
        raise ValueError("a question's timeout is a number of seconds above 0")
    return offered


class Waits:
    """One attempt's waits and its place in the job's mailbox."""

    def __init__(
        self,
        ctx: Attempt,
        mail: AttemptMail,
        *,
        park_after: float,
        poll: float,
        may_park: Callable[[], bool],
    ) -> None:
        self.ctx = ctx
        self.mail = mail
        self.park_after = park_after
        self.poll = poll
        self.may_park = may_park
        """Whether the job may run again from its checkpoint (its kind is retry-safe, or it
        saved one): else it never parks, and waits in its worker however long the wait."""
        self._arrived = asyncio.Event()
        self._count = 0  # waits since the last checkpoint
        self._last: LastPark | None = None  # the job's last park, read at the first need
        self.read: int | None = None
        """How far the handler has read its mailbox (a seq); None until it first looked."""

    def arrived(self) -> None:
        """Something came for this attempt (``NOTIFY errand_mailbox``): look again now."""
        self._arrived.set()

    def checkpointed(self) -> None:
        """The handler saved a checkpoint (with :attr:`read`): waits count from here, and the
        job's last park is behind it."""
        self._count = 0
        # Read again at the next need when it never looked at its mailbox (the saved place).
        self._last = None if self.read is None else LastPark(None, 0, None, self.read)

    # -- what came before -------------------------------------------------------------------

    async def _resume(self) -> LastPark:
        if self._last is None:
            self._last = await self.ctx.write("last_park", self.mail.last_park)
            if self.read is None:
                self.read = self._last.mailbox_read
        return self._last

    async def _replaying(self, number: int) -> str:
        """``done`` (a wait before the one the job parked at: over), ``parked`` (that wait) or
        ``new``."""
        last = await self._resume()
        if last.wait_for is None or number > last.number:
            return "new"
        return "parked" if number == last.number else "done"

    # -- waiting in the worker, then parking --------------------------------------------------

    def _park(self, wait: Wait) -> JobParked:
        self.ctx.parked = wait
        return JobParked(describe(wait))

    async def _until(
        self,
        check: Callable[[], Awaitable[T | None]],
        *,
        until: datetime | None,
        wait: Wait,
        person: bool = False,
    ) -> T | None:
        """Wait in this process until ``check()`` returns something (returned) or ``until``
        passes (None); past the park threshold, park. A worker stopping parks it too: the wait
        is a safe place to stop."""
        started = time.monotonic()
        park_at = started + self.park_after
        try:
            while True:
                self._arrived.clear()  # before looking: a NOTIFY during the look is kept
                if self.ctx.stop_reason is StopReason.SHUTDOWN and self.may_park():
                    raise self._park(wait)
                self.ctx.checkpoint()
                got = await self.ctx.write("look", check)
                if got is not None:
                    return got
                now = datetime.now(UTC)
                if until is not None and now >= until:
                    return None
                left = park_at - time.monotonic()
                soon = until is not None and (until - now).total_seconds() <= SLEEP_PARKS_AFTER
                if left <= 0 and self.may_park() and not soon:
                    raise self._park(wait)
                timeout = max(0.0, min(left if left > 0 else self.poll, self.poll))
                if until is not None:
                    timeout = min(timeout, (until - now).total_seconds())
                await self._woken(timeout)
        finally:
            if person:
                await self._count_waited(time.monotonic() - started)

    async def _woken(self, within: float) -> None:
        """Wait up to ``within`` seconds for something to arrive or a stop to be asked."""
        waiters = {
            asyncio.ensure_future(self._arrived.wait()),
            asyncio.ensure_future(self.ctx.cancelled.wait()),
        }
        try:
            await asyncio.wait(waiters, timeout=within, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)

    async def _count_waited(self, seconds: float) -> None:
        """Time waited for a person is not the handler's: the job's time bound moves by it,
        and it is recorded, so later attempts do not count it either."""
        if seconds <= 0:
            return
        deadline = self.ctx.job_deadline
        when = deadline.when() if deadline is not None else None
        if deadline is not None and when is not None and not deadline.expired():
            deadline.reschedule(when + seconds)
        await self.ctx.write("waited", lambda: self.mail.add_waited(seconds))

    # -- questions ------------------------------------------------------------------------

    async def ask(
        self,
        key: str,
        question: str,
        choices: Sequence[str] | None = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (a question's timeout, not this call's)
        default: Any = NO_DEFAULT,
        allow_text: bool | None = None,
    ) -> Any:
        """Ask the job's requester ``question`` (once per ``key``) and wait for the answer."""
        offered = _checked_question(key, question, choices, timeout)
        number = self._count = self._count + 1
        self.ctx.checkpoint()
        words = not offered if allow_text is None else allow_text
        asked = await self.ctx.write(
            "ask",
            lambda: self.mail.ask(key, question, offered, allow_text=words, expires_in=timeout),
        )
        wait = Wait(WaitFor.QUESTION, number, key=key, text=question, until=asked.expires_at)

        async def settled() -> Question | None:
            now = await self.mail.question(asked.id)
            return None if now.is_open else now

        got = asked if not asked.is_open else None
        if got is None:
            got = await self._until(settled, until=asked.expires_at, wait=wait, person=True)
        if got is None:  # out of time in this process: unless an answer came first, time out
            got = await self.ctx.write(
                "time_out",
                lambda: self.mail.close(asked.id, QuestionStatus.TIMED_OUT, "no answer in time"),
            )
        if got.status is QuestionStatus.ANSWERED:
            assert got.answer is not None
            return Answer(got.answer, got.answered_by, got.answer_choice)
        self.ctx.checkpoint()  # closed because the job is being cancelled: stop here
        if default is NO_DEFAULT:
            raise NoAnswer(key)
        return default

    # -- the mailbox ----------------------------------------------------------------------

    async def messages(self) -> list[Message]:
        """The follow-ups not seen yet, oldest first (each once: see :meth:`checkpointed`)."""
        await self._resume()
        got = await self.ctx.write("messages", lambda: self.mail.followups(self.read or 0))
        if got:
            self.read = got[-1].seq
        return got

    async def _next_message(self) -> Message | None:
        await self._resume()
        got = await self.mail.followups(self.read or 0, limit=1)
        if not got:
            return None
        self.read = got[0].seq
        return got[0]

    async def wait_for_message(self, timeout: float | None = None) -> Message | None:  # noqa: ASYNC109
        """The next follow-up, waiting up to ``timeout`` seconds (None: as long as it takes,
        the job's deadline aside); None when none came in time."""
        if timeout is not None and not timeout > 0:
            raise ValueError("a wait's timeout is a number of seconds above 0")
        number = self._count = self._count + 1
        until = None if timeout is None else datetime.now(UTC) + timedelta(seconds=timeout)
        if await self._replaying(number) != "new":
            until = datetime.now(UTC)  # it waited already: what is there now, or nothing
        wait = Wait(WaitFor.MESSAGE, number, until=until, after=self.read or 0)
        return await self._until(self._next_message, until=until, wait=wait, person=True)

    # -- time -----------------------------------------------------------------------------

    async def _nap(self, seconds: float) -> None:
        """Sleep in this process, waking at once (JobCancelled) when asked to stop."""
        self.ctx.checkpoint()
        try:
            await asyncio.wait_for(self.ctx.cancelled.wait(), timeout=seconds)
        except TimeoutError:
            return
        self.ctx.checkpoint()

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``: in this process up to the park threshold, then parked."""
        self._count += 1
        if seconds <= max(self.park_after, SLEEP_PARKS_AFTER):
            await self._nap(seconds)
            return
        until = datetime.now(UTC) + timedelta(seconds=seconds)
        await self._time(self._count, until)

    async def sleep_until(self, when: datetime) -> None:
        """Sleep until ``when`` (timezone-aware), parked once past the threshold."""
        if when.tzinfo is None:
            raise ValueError("sleep_until needs a timezone-aware datetime")
        self._count += 1
        await self._time(self._count, when)

    async def _time(self, number: int, until: datetime) -> None:
        replay = await self._replaying(number)
        if replay == "done":
            self.ctx.checkpoint()
            return
        if replay == "parked" and self._last is not None and self._last.until is not None:
            until = self._last.until  # the time it parked until, not one counted anew
        if not self.may_park():
            await self._nap(max(0.0, (until - datetime.now(UTC)).total_seconds()))
            return
        await self._until(_nothing, until=until, wait=Wait(WaitFor.TIME, number, until=until))


async def _nothing() -> None:
    """What a sleep waits for besides its time: nothing (its look finds nothing)."""
