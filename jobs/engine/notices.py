"""Notices: how a transport turns the engine's events into messages, exactly once.

Every transition of a job with an ``origin`` writes its event as a notice, in the same statement
(see ``job_transition``), and NOTIFYs ``errand_outbox``; a notice's delivery state lives on its
event (migrations/0009_notices_are_events.sql). A transport (the Discord bot) claims a job's
pending notices with a lease, delivers them in order, and records the id of what it created; a
failed delivery is retried with exponential backoff (jittered between half the base and the
ceiling, see :func:`retry_delay`), then dead-lettered with its reason. Leases make a crashed
transport's notices due again. Each lease carries its owner and a token, and every write about a
leased notice is fenced by that token, as attempts are: a process that stalled past its lease
while another took the notices over records nothing for them. The transport's own idempotency
(e.g. Discord's ``enforce_nonce``) covers the window between its effect and :meth:`Outbox.done`.

A sharded transport passes ``partition=(count, ids)``: it then delivers only the jobs whose
partition modulo ``count`` is in ``ids`` (see docs/discord.md, sharding).

This module knows nothing about any transport: notices are selected by the job's transport (a
typed column generated from its origin), and a delivery round works from one
:class:`NoticeRound`: the job as it is now and its leased notices (each a :class:`Notice`, the
event's own typed columns), read by one statement, so a transport renders the round without
reading the job again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar, NamedTuple

import asyncpg

from jobs.engine.ids import incarnation
from jobs.engine.mail import Question
from jobs.engine.queries import engine_queries
from jobs.engine.state import Actor, State
from jobs.engine.views import QUESTION_TOPIC, TOPIC, JobView
from jobs.errors import UnknownJob
from jobs.retry import backoff

OUTBOX_CHANNEL = "errand_outbox"
"""NOTIFY channel: a transition wrote a notice."""
PROGRESS_CHANNEL = "errand_progress"
"""NOTIFY channel: a job's progress changed (payload: its public id)."""

_SQL = engine_queries()


@dataclass(frozen=True)
class Notice:
    """One notice to deliver: a transition of one job, as its event recorded it, with its
    delivery state."""

    id: int
    job_id: int
    from_state: State | None
    to_state: State
    actor: Actor
    reason: str | None
    at: datetime
    attempts: int
    """Delivery attempts so far (this one included, once claimed)."""
    delivered_at: datetime | None
    dead_at: datetime | None
    error: str | None
    """Why the last delivery failed."""
    external_id: str | None
    """What the transport made of it (e.g. the Discord message id), once delivered."""
    due_at: datetime | None = None
    """When it is next due (its backoff, or its lease while claimed)."""
    lease_token: uuid.UUID | None = None
    """The lease this notice was claimed under; writes about it are fenced by it."""
    topic: str = TOPIC
    """``transition`` (a state change) or ``question`` (a change of one of its questions)."""
    question: Question | None = None
    """A question's notice (claimed in a round): the question as it is now, with its answer."""
    question_shown_as: str | None = None
    """What the transport made of the question (the message an earlier notice posted)."""
    by: str | None = None
    """Who asked for the transition, where a request records them (a resolve: ``discord:42``)."""
    note: str | None = None
    """What they wrote, where a request records it (a resolve's note)."""

    @property
    def is_question(self) -> bool:
        """About one of the job's questions, not a change of its state."""
        return self.topic == QUESTION_TOPIC

    @classmethod
    def from_record(cls, r: asyncpg.Record, prefix: str = "") -> Notice:
        """The notice in ``r``, whose columns are named ``prefix`` + the event's column."""
        return cls(
            topic=r[f"{prefix}topic"],
            id=r[f"{prefix}id"],
            job_id=r[f"{prefix}job_id"],
            from_state=State(r[f"{prefix}from_state"]) if r[f"{prefix}from_state"] else None,
            to_state=State(r[f"{prefix}to_state"]),
            actor=Actor(r[f"{prefix}actor"]),
            reason=r[f"{prefix}reason"],
            at=r[f"{prefix}at"],
            attempts=r[f"{prefix}delivery_attempts"],
            delivered_at=r[f"{prefix}delivered_at"],
            dead_at=r[f"{prefix}dead_at"],
            error=r[f"{prefix}delivery_error"],
            external_id=r[f"{prefix}external_id"],
            due_at=r[f"{prefix}notice_at"],
            lease_token=r[f"{prefix}lease_token"],
            by=r[f"{prefix}by"],
            note=r[f"{prefix}note"],
        )

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape of a notice (``errand outbox list``, ``errand job show``)."""
        return {
            "id": self.id,
            "event_id": self.id,
            "topic": self.topic,
            "payload": {
                "from": self.from_state.value if self.from_state else None,
                "to": self.to_state.value,
                "reason": self.reason,
            },
            "created_at": self.at.isoformat(),
            "available_at": self.due_at.isoformat() if self.due_at else None,
            "attempts": self.attempts,
            "delivered_at": self.delivered_at.isoformat() if self.delivered_at else None,
            "dead_at": self.dead_at.isoformat() if self.dead_at else None,
            "last_error": self.error,
            "external_id": self.external_id,
        }

    @property
    def status(self) -> str:
        """``delivered``, ``dead`` or ``pending``."""
        if self.delivered_at is not None:
            return "delivered"
        return "dead" if self.dead_at is not None else "pending"


class AssetLine(NamedTuple):
    """One asset a job left behind, as a notice lists it."""

    name: str
    size: int


@dataclass(frozen=True)
class NoticeRound:
    """What one delivery round of a job works from, as ``notice_round`` returns it in one
    statement: the job as it is now, the assets it left, and the notices this round leased, oldest
    first (none for a plain look, or when none was due). The job is at least as new as every
    notice: a transport renders its current state and each notice from this alone."""

    job: JobView
    assets: tuple[AssetLine, ...]
    notices: tuple[Notice, ...]

    @classmethod
    def from_records(cls, rows: list[asyncpg.Record]) -> NoticeRound:
        """The round in ``notice_round``'s rows: the job repeated on each, one notice per row."""
        first = rows[0]
        assets = zip(first["asset_names"], first["asset_sizes"], strict=True)
        return cls(
            job=JobView.from_record(first),
            assets=tuple(AssetLine(name, size) for name, size in assets),
            notices=tuple(_notice_of(r) for r in rows if r["n_id"] is not None),
        )


class SilentJob(NamedTuple):
    """A live job whose worker has not been heard from for a while, and since when."""

    job_id: int
    public_id: str
    heartbeat_at: datetime


def _notice_of(r: asyncpg.Record) -> Notice:
    """A leased notice in a ``notice_round`` row, with its question when it is about one."""
    notice = Notice.from_record(r, "n_")
    if r["q_id"] is None:
        return notice
    question = Question.from_record(r, "q_")
    return replace(notice, question=question, question_shown_as=r["q_shown_as"])


@dataclass(frozen=True)
class DueJob:
    """A job with pending notices."""

    job_id: int
    public_id: str


def retry_delay(attempt: int, *, base: float, cap: float = 600.0) -> float:
    """Seconds before delivery attempt ``attempt + 1``: :func:`jobs.retry.backoff` with a floor
    of half the base, so a retry never comes at once."""
    return backoff(attempt, base=base, cap=cap, floor=base / 2)


class Outbox:
    """Claims, delivers, retries and dead-letters the notices of one transport."""

    CHANNEL: ClassVar[str] = OUTBOX_CHANNEL
    """NOTIFY channel: a transition wrote a notice."""
    PROGRESS_CHANNEL: ClassVar[str] = PROGRESS_CHANNEL
    """NOTIFY channel: a job's progress changed (payload: its public id)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        transport: str,
        *,
        lease_seconds: float = 30.0,
        max_attempts: int = 6,
        retry_base_seconds: float = 2.0,
        owner: str | None = None,
        partition: tuple[int, Sequence[int]] | None = None,
    ) -> None:
        self.pool = pool
        self.transport = transport
        self.owner = owner or incarnation()
        """Who holds the leases this outbox takes (a process id), for operators."""
        self.partition = partition
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self.retry_base_seconds = retry_base_seconds

    def _mine(self) -> dict[str, Any]:
        """The named parameters that pick this transport's jobs (sharded: its partitions')."""
        count, ids = self.partition or (0, ())
        return {"transport": self.transport, "partitions": count, "mine": list(ids)}

    async def due_jobs(self, limit: int = 100) -> list[DueJob]:
        """Jobs of this transport with notices due now, oldest first."""
        rows = await _SQL.fetch(self.pool, "notice_due_jobs", limit=limit, **self._mine())
        return [DueJob(r["job_id"], r["public_id"]) for r in rows]

    async def silent_jobs(self, seconds: float, limit: int = 100) -> list[SilentJob]:
        """Live jobs of this transport whose worker was last heard from more than ``seconds``
        ago, longest silent first (what they show may say so before the reaper acts)."""
        rows = await _SQL.fetch(
            self.pool, "job_silent", seconds=seconds, limit=limit, **self._mine()
        )
        return [SilentJob(r["job_id"], r["public_id"], r["heartbeat_at"]) for r in rows]

    async def claim(self, job_id: int) -> NoticeRound:
        """Lease a job's pending notices, in order, and read the job as it is now, in one
        statement; no notices when none is due or another holds them.

        Raises:
            UnknownJob: the job is gone (pruned).
        """
        return await self._round(job_id, claim=True)

    async def look(self, job_id: int) -> NoticeRound:
        """The job as it is now, with its assets, leasing nothing (a round's second look, after
        it waited).

        Raises:
            UnknownJob: the job is gone (pruned).
        """
        return await self._round(job_id, claim=False)

    async def _round(self, job_id: int, *, claim: bool) -> NoticeRound:
        rows = await _SQL.fetch(
            self.pool,
            "notice_round",
            job_id=job_id,
            claim=claim,
            lease_seconds=self.lease_seconds,
            owner=self.owner,
        )
        if not rows:
            raise UnknownJob(str(job_id))
        return NoticeRound.from_records(rows)

    async def done(self, notice: Notice, external_id: str | None) -> bool:
        """Record a delivery and the id of what the transport created.

        Returns:
            False when the lease was lost (another process holds the notice now).
        """
        written = await _SQL.fetchval(
            self.pool,
            "notice_done",
            id=notice.id,
            external_id=external_id,
            lease_token=notice.lease_token,
        )
        return written is not None

    async def release(self, notices: Sequence[Notice], delay: float) -> None:
        """Hand notices back without counting an attempt (the transport was not ready)."""
        if notices:
            await _SQL.execute(
                self.pool,
                "notice_release",
                ids=[n.id for n in notices],
                delay=delay,
                lease_tokens=[n.lease_token for n in notices],
            )

    async def failed(self, notice: Notice, error: str) -> bool:
        """Record a failed delivery: retry later with backoff, or dead-letter.

        Returns:
            True when the notice was dead-lettered (by this call, under this lease).
        """
        error = error[:500]
        if notice.attempts >= self.max_attempts:
            dead = await _SQL.fetchval(
                self.pool, "notice_dead", id=notice.id, error=error, lease_token=notice.lease_token
            )
            return dead is not None
        delay = retry_delay(notice.attempts, base=self.retry_base_seconds)
        await _SQL.execute(
            self.pool,
            "notice_retry",
            id=notice.id,
            delay=delay,
            error=error,
            lease_token=notice.lease_token,
        )
        return False

    async def notices(self, job_id: int) -> list[Notice]:
        """Every notice of a job, oldest first (for status pages)."""
        records = await _SQL.fetch(self.pool, "notice_list_by_job", job_id=job_id)
        return [Notice.from_record(r) for r in records]
