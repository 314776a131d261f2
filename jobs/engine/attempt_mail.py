"""One attempt's side of its job's conversation: the questions it asks, the follow-ups it reads,
the job's last park, and the time it waited for a person; every write fenced by the attempt.

Part of the engine's records of an attempt (:mod:`jobs.engine.records` holds its steps, usage,
effects and assets); the runtime's waits (:mod:`jobs.runtime.waits`) stand on it. What people
send (answers, follow-ups) is written by the store (:mod:`jobs.engine.store.mailbox`).
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from jobs.engine.mail import LastPark, Message, Question, QuestionStatus
from jobs.engine.queries import engine_queries
from jobs.engine.state import Actor
from jobs.errors import LeaseLost

_SQL = engine_queries()


class AttemptMail:
    """Fenced reads and writes of one attempt's questions and mailbox."""

    def __init__(self, pool: asyncpg.Pool, job_id: int, attempt_id: int, public_id: str) -> None:
        self.pool = pool
        self.job_id = job_id
        self.attempt_id = attempt_id
        self.public_id = public_id

    async def last_park(self) -> LastPark:
        """The job's last park since its checkpoint, and how far that checkpoint read the
        mailbox. Raises LeaseLost."""
        record = await _SQL.fetchrow(
            self.pool, "job_last_park", job_id=self.job_id, attempt_id=self.attempt_id
        )
        if record is None:
            raise LeaseLost(self.public_id)
        return LastPark.from_record(record)

    async def ask(
        self,
        key: str,
        text: str,
        choices: Sequence[str],
        *,
        allow_text: bool,
        expires_in: float | None,
    ) -> Question:
        """Ask a question, once per key: a new one (its notice tells the transport), or the one
        asked before under this key, as it now is. Raises LeaseLost."""
        record = await _SQL.fetchrow(
            self.pool,
            "question_ask",
            job_id=self.job_id,
            attempt_id=self.attempt_id,
            key=key,
            text=text,
            choices=list(choices),
            allow_text=allow_text,
            timeout_seconds=expires_in,
        )
        if record is None:
            raise LeaseLost(self.public_id)
        return Question.from_record(record)

    async def question(self, question_id: int) -> Question:
        """One of the job's questions as it now is, with its answer."""
        record = await _SQL.fetchrow(
            self.pool,
            "question_find",
            job_id=self.job_id,
            question_id=question_id,
            key=None,
            wait_key=None,
        )
        assert record is not None  # questions are deleted only with their job
        return Question.from_record(record)

    async def close(self, question_id: int, status: QuestionStatus, reason: str) -> Question:
        """Close the question unless an answer came first (the job's row lock orders the two);
        the question as it then is. Raises LeaseLost (nothing closed)."""
        async with self.pool.acquire() as conn, conn.transaction():
            locked = await _SQL.fetchval(
                conn, "job_lock_for_attempt", job_id=self.job_id, attempt_id=self.attempt_id
            )
            if locked is None:
                raise LeaseLost(self.public_id)
            await _SQL.fetch(
                conn,
                "question_close",
                job_ids=[self.job_id],
                keys=[None],
                status=status.value,
                reason=reason,
                actor=Actor.SYSTEM.value,
                attempt_id=self.attempt_id,
                question_id=question_id,
            )
        return await self.question(question_id)

    async def followups(self, after: int, limit: int = 100) -> list[Message]:
        """The job's follow-ups after ``after`` (a seq), oldest first."""
        records = await _SQL.fetch(
            self.pool, "message_followups_after", job_id=self.job_id, after=after, limit=limit
        )
        return [Message.from_record(r) for r in records]

    async def add_waited(self, seconds: float) -> None:
        """Count ``seconds`` this attempt waited for a person (not toward the job's time)."""
        await _SQL.fetchval(
            self.pool, "attempt_add_waited", attempt_id=self.attempt_id, seconds=seconds
        )
