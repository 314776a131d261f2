"""What people say to a job: answer its question, or tell it something (a follow-up).

Each verb locks the job first (``job_lock_for_mail``) and does the rest in the same transaction,
so a question's first valid answer wins, the mailbox's order is its commit order, and a waiting
job leaves ``waiting`` (:func:`jobs.engine.policy.wake`) in the statement after its message is
recorded, never before nor without it. The transport's id of what carried a message (a Discord
interaction or message) makes a resend answer as the first one did, recording nothing more.
Races and their outcomes: docs/state-machine.md, "Waiting".
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import jobs.limits as limits
from jobs.engine import policy
from jobs.engine.db import Conn
from jobs.engine.ids import normalize
from jobs.engine.mail import MAX_MESSAGE, Message, Question, QuestionStatus, WaitFor
from jobs.engine.moves import AnswerOutcome, AnswerResult, Row, TellOutcome
from jobs.engine.state import TERMINAL, Actor, State
from jobs.engine.store.reads import Reads
from jobs.engine.transition import close_questions, transition
from jobs.engine.views import JobView
from jobs.errors import JobEnded, NoOpenQuestion, NotOffered, UnknownJob


def _words(question: Question, text: str | None, choice: int | None) -> tuple[str, int | None]:
    """The answer's words and its choice's index. Raises NotOffered or InvalidInput."""
    if choice is not None:
        if not 0 <= choice < len(question.choices):
            raise NotOffered(f"question {question.key!r} has no choice {choice + 1}")
        return question.choices[choice], choice
    words = limits.text("answer", (text or "").strip(), MAX_MESSAGE)
    if not words:
        raise limits.InvalidInput("answer: say something")
    # A choice's words answer as the choice, whatever their case.
    folded = [c.casefold() for c in question.choices]
    if words.casefold() in folded:
        index = folded.index(words.casefold())
        return question.choices[index], index
    if not question.allow_text:
        offered = ", ".join(question.choices)
        raise NotOffered(f"{words[:60]!r} is not one of the choices of {question.key!r}: {offered}")
    return words, None


class Mailbox(Reads):
    """``answer`` and ``tell``."""

    async def _lock_for_mail(self, conn: Conn, public_id: str) -> Any:
        record = await self.sql.fetchrow(conn, "job_lock_for_mail", public_id=normalize(public_id))
        if record is None:
            raise UnknownJob(public_id)
        return record

    async def _replayed(self, conn: Conn, transport_id: str | None) -> Message | None:
        if transport_id is None:
            return None
        record = await self.sql.fetchrow(conn, "message_by_transport_id", transport_id=transport_id)
        return Message.from_record(record) if record is not None else None

    async def _question(
        self,
        conn: Conn,
        job_id: int,
        *,
        question_id: int | None = None,
        key: str | None = None,
        wait_key: str | None = None,
    ) -> Question | None:
        record = await self.sql.fetchrow(
            conn,
            "question_find",
            job_id=job_id,
            question_id=question_id,
            key=key,
            wait_key=wait_key,
        )
        return Question.from_record(record) if record is not None else None

    async def _job(self, conn: Conn, job_id: int) -> JobView:
        record = await self.sql.fetchrow(conn, "job_get_by_id", id=job_id)
        assert record is not None  # locked by this transaction
        return JobView.from_record(record)

    async def _record(
        self,
        conn: Conn,
        job_id: int,
        *,
        actor: Actor,
        by: str,
        text: str,
        choice: int | None = None,
        question_id: int | None = None,
        refused: str | None = None,
        transport_id: str | None = None,
    ) -> Message:
        record = await self.sql.fetchrow(
            conn,
            "message_insert",
            job_id=job_id,
            actor=actor.value,
            sender=by,
            text=text,
            choice=choice,
            question_id=question_id,
            refused=refused,
            transport_id=transport_id,
        )
        assert record is not None  # the job is locked by this transaction
        return Message.from_record(record)

    async def _wake(self, conn: Conn, job_id: int, actor: Actor, reason: str, at: datetime) -> None:
        """Move a waiting job to queued, due now (the database's clock, ``at``)."""
        row = Row(job_id, reason=reason, run_at=at)
        [moved] = await transition(conn, policy.wake(actor), [row])
        assert moved.ok  # locked, and waiting, in this transaction

    async def answer(
        self,
        public_id: str,
        text: str | None = None,
        *,
        choice: int | None = None,
        key: str | None = None,
        question_id: int | None = None,
        actor: Actor,
        by: str,
        transport_id: str | None = None,
    ) -> AnswerOutcome:
        """Answer one of a job's questions: the question of ``key`` (or ``question_id``), else
        the one it waits for; ``text`` (a choice's words count as the choice) or ``choice`` (the
        index of one of its choices).

        The first valid answer wins: it is recorded, the question is answered, and the job,
        when it was parked waiting for it, is queued, due at once (when it waits in its worker,
        it is told). A later answer gets ``already_answered``, an answer to a closed question
        (timed out, the job cancelled or ended, or being cancelled) ``closed``; both are
        recorded as refused, on the job's timeline, and change nothing else.

        Raises:
            UnknownJob: no such job.
            NoOpenQuestion: it never asked that question (or, no key, any question).
            NotOffered: words that are not one of its choices, when it takes no words of one's
                own; a choice it does not have.
            InvalidInput: no words, or too many.
        """
        async with self.pool.acquire() as conn, conn.transaction():
            locked = await self._lock_for_mail(conn, public_id)
            job_id, state = locked["id"], State(locked["state"])
            earlier = await self._replayed(conn, transport_id)
            if earlier is not None and earlier.job_id == job_id:
                return await self._replay_answer(conn, earlier)
            question = await self._question(
                conn, job_id, question_id=question_id, key=key, wait_key=locked["wait_key"]
            )
            if question is None:
                what = f"question {key!r}" if key is not None else "a question"
                raise NoOpenQuestion(f"job {normalize(public_id)} is not waiting for {what}")
            words, index = _words(question, text, choice)
            result, why = AnswerResult.ANSWERED, None
            if question.status is QuestionStatus.ANSWERED:
                result = AnswerResult.ALREADY_ANSWERED
                why = f"already answered by {question.answered_by}"
            elif not question.is_open:
                result = AnswerResult.CLOSED
                why = question.closed_reason or "the question is closed"
            elif state in TERMINAL or state is State.CANCELLING:
                result = AnswerResult.CLOSED
                ended = "is being cancelled" if state is State.CANCELLING else state.value
                why = f"the job {ended}"
                if state in TERMINAL:  # a job that ended while it asked: close it now
                    await close_questions(
                        conn,
                        [job_id],
                        status=QuestionStatus.CLOSED,
                        reason=why,
                        actor=Actor.SYSTEM,
                        keys=[question.key],
                    )
            message = await self._record(
                conn,
                job_id,
                actor=actor,
                by=by,
                text=words,
                choice=index,
                question_id=question.id,
                refused=why,
                transport_id=transport_id,
            )
            if result is AnswerResult.ANSWERED:
                await self.sql.fetch(
                    conn,
                    "question_answer",
                    question_id=question.id,
                    message_id=message.id,
                    actor=actor.value,
                    reason=f"answered by {by}: {words[:300]}",
                )
                waits_for_it = (
                    locked["wait_for"] == WaitFor.QUESTION and locked["wait_key"] == question.key
                )
                if state is State.WAITING and waits_for_it:
                    await self._wake(conn, job_id, actor, f"answered by {by}", locked["at"])
            after = await self._question(conn, job_id, question_id=question.id)
            assert after is not None
            return AnswerOutcome(result, after, await self._job(conn, job_id), why)

    async def _replay_answer(self, conn: Conn, earlier: Message) -> AnswerOutcome:
        """What a resent answer gets: what the first one got, recording nothing."""
        question = await self._question(conn, earlier.job_id, question_id=earlier.question_id)
        if question is None:
            raise NoOpenQuestion(f"message {earlier.seq} answers no question")
        if earlier.refused is None:
            result = AnswerResult.ANSWERED
        elif question.status is QuestionStatus.ANSWERED:
            result = AnswerResult.ALREADY_ANSWERED
        else:
            result = AnswerResult.CLOSED
        job = await self._job(conn, earlier.job_id)
        return AnswerOutcome(result, question, job, earlier.refused, replayed=True)

    async def tell(
        self,
        public_id: str,
        text: str,
        *,
        actor: Actor,
        by: str,
        transport_id: str | None = None,
    ) -> TellOutcome:
        """Send a job a follow-up: recorded in its mailbox, next in order; a job parked waiting
        for a message is queued, due at once, and one waiting in its worker is told. Its handler
        reads it with ``ctx.messages()`` or ``ctx.wait_for_message()``.

        Raises:
            UnknownJob: no such job.
            JobEnded: it has ended; nothing was recorded.
            InvalidInput: no words, or too many.
        """
        words = limits.text("message", text.strip(), MAX_MESSAGE)
        if not words:
            raise limits.InvalidInput("message: say something")
        async with self.pool.acquire() as conn, conn.transaction():
            locked = await self._lock_for_mail(conn, public_id)
            job_id, state = locked["id"], State(locked["state"])
            earlier = await self._replayed(conn, transport_id)
            if earlier is not None and earlier.job_id == job_id:
                return TellOutcome(earlier, await self._job(conn, job_id), replayed=True)
            if state in TERMINAL:
                raise JobEnded(
                    f"job {normalize(public_id)} already {state.value}: nobody would read it"
                )
            message = await self._record(
                conn, job_id, actor=actor, by=by, text=words, transport_id=transport_id
            )
            if state is State.WAITING and locked["wait_for"] == WaitFor.MESSAGE:
                await self._wake(conn, job_id, actor, f"a message from {by}", locked["at"])
            return TellOutcome(message, await self._job(conn, job_id))
