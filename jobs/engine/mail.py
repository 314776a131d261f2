"""The records of a job that talks back: its questions, the messages in its mailbox, what a
parked handler waits for.

Each is built once from the row its statement returns (``jobs/engine/sql/question.sql``,
``message.sql``). The store's verbs for people are in :mod:`jobs.engine.store.mailbox` (what they
answer is in :mod:`jobs.engine.moves`), an attempt's own reads and writes in
:mod:`jobs.engine.attempt_mail`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from jobs.engine.state import Actor

MAX_QUESTION = 1000
"""Characters of a question's words."""
MAX_CHOICES = 25
"""Choices of one question (what one select menu holds)."""
MAX_CHOICE = 100
"""Characters of one choice."""
MAX_KEY = 100
"""Characters of a question's key."""
MAX_MESSAGE = 4000
"""Characters of one message or free-text answer."""


class WaitFor(StrEnum):
    """What a parked handler waits for (``job.wait_for``)."""

    QUESTION = "question"
    MESSAGE = "message"
    TIME = "time"


@dataclass(frozen=True)
class Wait:
    """One wait of a handler, as the runtime parks it.

    ``number`` says which wait of the handler it is, counted from its last checkpoint (the
    first is 1): the attempt that resumes the job replays from that checkpoint and returns from
    this same wait. ``after`` (message waits) is how far the handler had read its mailbox.
    """

    wait_for: WaitFor
    number: int
    key: str | None = None
    text: str | None = None
    until: datetime | None = None
    after: int = 0


@dataclass(frozen=True)
class LastPark:
    """What an attempt starting on a job reads of the job's last park and of its mailbox: the
    wait it parked at (None when it never parked since its last checkpoint) and how far its
    checkpoint has read the mailbox."""

    wait_for: WaitFor | None
    number: int
    until: datetime | None
    mailbox_read: int

    @classmethod
    def from_record(cls, r: Any) -> LastPark:
        return cls(
            wait_for=WaitFor(r["wait_for"]) if r["wait_for"] else None,
            number=int(r["wait_number"] or 0),
            until=r["wait_until"],
            mailbox_read=int(r["mailbox_read"]),
        )


class QuestionStatus(StrEnum):
    """Where a question is (``job_question.status``)."""

    OPEN = "open"
    ANSWERED = "answered"
    TIMED_OUT = "timed_out"
    CLOSED = "closed"
    """The job was cancelled or ended before anyone answered."""


@dataclass(frozen=True)
class Question:
    """One question a job asked, with its answer once it has one."""

    id: int
    job_id: int
    key: str
    text: str
    choices: tuple[str, ...]
    allow_text: bool
    asked_at: datetime
    expires_at: datetime | None
    status: QuestionStatus
    closed_at: datetime | None
    closed_reason: str | None
    answer: str | None = None
    """The answer's words (a choice's, or the text written)."""
    answered_by: str | None = None
    """Who answered (a requester id such as ``discord:42``, or ``cli``)."""
    answer_choice: int | None = None

    @classmethod
    def from_record(cls, r: Any, prefix: str = "") -> Question:
        """The question in ``r``, whose columns are named ``prefix`` + the column (its answer's
        ``answer_text``, ``answered_by`` and ``answer_choice`` from the join)."""
        return cls(
            id=r[f"{prefix}id"],
            job_id=r[f"{prefix}job_id"],
            key=r[f"{prefix}key"],
            text=r[f"{prefix}text"],
            choices=tuple(r[f"{prefix}choices"]),
            allow_text=r[f"{prefix}allow_text"],
            asked_at=r[f"{prefix}asked_at"],
            expires_at=r[f"{prefix}expires_at"],
            status=QuestionStatus(r[f"{prefix}status"]),
            closed_at=r[f"{prefix}closed_at"],
            closed_reason=r[f"{prefix}closed_reason"],
            answer=r[f"{prefix}answer_text"],
            answered_by=r[f"{prefix}answered_by"],
            answer_choice=r[f"{prefix}answer_choice"],
        )

    @property
    def is_open(self) -> bool:
        return self.status is QuestionStatus.OPEN

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "question": self.text,
            "choices": list(self.choices),
            "allow_text": self.allow_text,
            "asked_at": self.asked_at.isoformat(),
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "status": self.status.value,
            "answer": self.answer,
            "answered_by": self.answered_by,
            "closed_reason": self.closed_reason,
        }


@dataclass(frozen=True)
class Message:
    """One message in a job's mailbox."""

    id: int
    job_id: int
    seq: int
    actor: Actor
    sender: str
    text: str
    choice: int | None
    question_id: int | None
    refused: str | None
    at: datetime

    @classmethod
    def from_record(cls, r: Any) -> Message:
        return cls(
            id=r["id"],
            job_id=r["job_id"],
            seq=r["seq"],
            actor=Actor(r["actor"]),
            sender=r["sender"],
            text=r["text"],
            choice=r["choice"],
            question_id=r["question_id"],
            refused=r["refused"],
            at=r["at"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "from": self.sender,
            "actor": self.actor.value,
            "text": self.text,
            "choice": self.choice,
            "answers": self.question_id,
            "refused": self.refused,
            "at": self.at.isoformat(),
        }
