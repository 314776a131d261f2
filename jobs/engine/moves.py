"""The write vocabulary of the job record: a move, the rows it applies to, how an attempt ends,
and what a request to move a job answers.

:func:`jobs.engine.transition.transition` takes a :class:`Policy` (who moves, along which
edges, under which fence) and :class:`Row` objects; the worker's report of an attempt's end,
:data:`Finish`, is such a row. :mod:`jobs.engine.policy` holds the policies themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from jobs.engine.mail import Message, Question, Wait
from jobs.engine.state import Actor, State, check_moves
from jobs.engine.views import JobView


class AttemptOutcome(StrEnum):
    """How an attempt ended (the ``attempt.outcome`` column)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRY = "retry"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"
    RELEASED = "released"
    """Handed back by a stopping worker; the job is queued again."""
    ABANDONED = "abandoned"
    """Its lease expired (its worker stopped heartbeating: a crash); the reaper ended it."""
    LEASE_LOST = "lease_lost"
    """Its lease ran out after a database outage: its worker was last heard of before the outage
    and did not heartbeat within the grace after it (docs/state-machine.md)."""
    REVOKED = "revoked"
    """A forced cancel or the cancel grace ended it while it ran."""
    PARKED = "parked"
    """Its handler waits (a question, a message, a time) longer than a worker keeps it: the job
    is ``waiting`` (or queued again at once when what it waits for came meanwhile)."""


Fence = Literal["attempt", "none"]
"""``attempt``: only the row's current attempt may write (a refused write is kept as an
ignored event); ``none``: no attempt is involved (a person's request, a deadline)."""


@dataclass(frozen=True)
class Move:
    """One planned edge: from ``source`` to ``target``; ``outcome`` ends the live attempt.

    ``charge`` uses up one of the job's ``max_attempts`` (``failures`` + 1): set only for a
    handler failure, or a crash of a kind that counts crashes (docs/state-machine.md).
    """

    source: State
    target: State
    reason: str | None = None
    outcome: AttemptOutcome | None = None
    charge: bool = False


@dataclass(frozen=True)
class Policy:
    """A kind of request: who makes it, the edges it may take (one per source state), the fence
    its rows are written under, and the target an ignored event names when a fenced write is
    refused."""

    actor: Actor
    moves: tuple[Move, ...]
    fence: Fence
    nominal: State

    def __post_init__(self) -> None:
        check_moves(self.actor, {m.source: m.target for m in self.moves})
        if len({m.source for m in self.moves}) != len(self.moves):
            raise ValueError("at most one move per source state")


@dataclass(frozen=True)
class Row:
    """One job to move, with what the writer brings.

    The worker's report of how an attempt ended is a row with its ``outcome`` (see
    :data:`Finish`); ``mid_run`` marks a released attempt whose job may not run again from the
    start (not retry-safe, no checkpoint): the job ends ``unknown`` instead of being queued.
    """

    job_id: int
    attempt_id: int | None = None
    outcome: AttemptOutcome | None = None
    result: Any = None
    error: Any = None
    reason: str | None = None
    run_at: datetime | None = None
    mid_run: bool = False
    wait: Wait | None = None
    """A parked attempt's wait (outcome ``parked``): what its handler waits for."""


Finish = Row
"""How an attempt ended, as the worker runtime reports it: a :class:`Row` with its outcome."""


@dataclass(frozen=True)
class Moved:
    """What a transition did to one row: moved to ``target``, or refused (``target`` None)."""

    job_id: int
    source: State
    target: State | None
    public_id: str | None = None
    kind: str | None = None
    since_due: timedelta | None = None
    """How long the job had been due when it moved (for a claim: its wait to start)."""
    raced: bool = False
    """Not moved because a claim committed under the statement: move it again in a new one."""

    @property
    def ok(self) -> bool:
        return self.target is not None


@dataclass(frozen=True)
class CancelRequest:
    """Who asks a job to stop and why, recorded once on the job."""

    by: str
    reason: str


class CancelResult(StrEnum):
    """What a cancel request did to the job."""

    CANCELLED = "cancelled"
    """It was queued (or forced) and is now cancelled."""
    CANCELLING = "cancelling"
    """It was running; the attempt was told to stop."""
    ALREADY_CANCELLING = "already_cancelling"
    """A cancel was already under way; nothing changed."""
    TOO_LATE = "too_late"
    """It had already ended; nothing changed."""


@dataclass(frozen=True)
class CancelOutcome:
    """What a cancel request did, and the job as it now is."""

    job: JobView
    outcome: CancelResult
    changed: bool


class ResolveAs(StrEnum):
    """How a person settles an ``unknown`` job."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRY = "retry"
    CANCELLED = "cancelled"


Verdict = Literal["cancelling", "lost"]
"""A heartbeat's answer for an attempt that must stop: a cancel was requested (``cancelling``), or
the attempt no longer holds the lease (``lost``)."""


class AnswerResult(StrEnum):
    """What an answer did."""

    ANSWERED = "answered"
    """The question's first valid answer: recorded, and the job resumes."""
    ALREADY_ANSWERED = "already_answered"
    """Someone answered first; this one is recorded as refused and changes nothing."""
    CLOSED = "closed"
    """The question was closed (timed out, or the job was cancelled or ended); refused."""


@dataclass(frozen=True)
class AnswerOutcome:
    """An answer's outcome, the question as it now is and the job; ``why`` says why a refused
    answer was refused, in words."""

    result: AnswerResult
    question: Question
    job: JobView
    why: str | None = None
    replayed: bool = False
    """The transport sent this answer before (a resent interaction): nothing was recorded."""


@dataclass(frozen=True)
class TellOutcome:
    """A follow-up's outcome: the message as recorded and the job (queued when it waited for a
    message)."""

    message: Message
    job: JobView
    replayed: bool = False
    """The transport sent this message before: nothing was recorded."""
