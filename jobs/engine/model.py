"""Read models of the job record: what ``status``, ``list`` and transports see."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

import asyncpg

from jobs.engine.state import State


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def jsonable(row: asyncpg.Record) -> dict[str, Any]:
    """A database row with its datetimes as ISO strings, ready for JSON."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in dict(row).items()}


@dataclass(frozen=True)
class JobView:
    """One job as stored."""

    id: int
    public_id: str
    kind: str
    params: dict[str, Any]
    requester: str
    origin: dict[str, Any]
    origin_group: str | None
    state: State
    reason: str | None
    result: Any
    error: Any
    attempts: int
    max_attempts: int
    current_attempt_id: int | None
    run_at: datetime
    deadline_at: datetime | None
    cancel_requested_at: datetime | None
    cancel_requested_by: str | None
    cancel_reason: str | None
    progress: dict[str, Any] | None
    usage: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def from_record(cls, r: Any) -> JobView:
        names = cls.__dataclass_fields__
        values = {k: r[k] for k in names if k != "state"}
        return cls(state=State(r["state"]), **values)

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape (``errand job ... --json``)."""
        return {
            "id": self.public_id,
            "kind": self.kind,
            "state": self.state.value,
            "reason": self.reason,
            "params": self.params,
            "requester": self.requester,
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "progress": self.progress,
            "usage": self.usage,
            "result": self.result,
            "error": self.error,
            "run_at": _iso(self.run_at),
            "deadline_at": _iso(self.deadline_at),
            "cancel_requested_at": _iso(self.cancel_requested_at),
            "created_at": _iso(self.created_at),
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
        }


@dataclass(frozen=True)
class EventView:
    """One event of a job's timeline."""

    id: int
    from_state: State | None
    to_state: State
    actor: str
    attempt_id: int | None
    reason: str | None
    at: datetime
    data: Any
    ignored: bool

    @classmethod
    def from_record(cls, r: Any) -> EventView:
        return cls(
            id=r["id"],
            from_state=State(r["from_state"]) if r["from_state"] else None,
            to_state=State(r["to_state"]),
            actor=r["actor"],
            attempt_id=r["attempt_id"],
            reason=r["reason"],
            at=r["at"],
            data=r["data"],
            ignored=r["ignored"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.from_state.value if self.from_state else None,
            "to": self.to_state.value,
            "actor": self.actor,
            "attempt": self.attempt_id,
            "reason": self.reason,
            "at": _iso(self.at),
            "ignored": self.ignored,
            "data": self.data,
        }


@dataclass(frozen=True)
class AttemptView:
    """One attempt (one claim) of a job."""

    id: int
    number: int
    worker: str
    started_at: datetime
    heartbeat_at: datetime
    lease_expires_at: datetime
    ended_at: datetime | None
    outcome: str | None
    error: Any

    @classmethod
    def from_record(cls, r: Any) -> AttemptView:
        return cls(**{k: r[k] for k in cls.__dataclass_fields__})

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("started_at", "heartbeat_at", "lease_expires_at", "ended_at"):
            out[key] = _iso(out[key])
        return out


@dataclass(frozen=True)
class JobStatus:
    """A job with its attempts and events: the full truth at this moment."""

    job: JobView
    attempts: list[AttemptView] = field(default_factory=list)
    events: list[EventView] = field(default_factory=list)
    # The runtime's record: steps (name, usage, outcome) and assets (what is left behind).
    steps: list[dict[str, Any]] = field(default_factory=list)
    assets: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = self.job.to_json()
        out["attempt_history"] = [a.to_json() for a in self.attempts]
        out["events"] = [e.to_json() for e in self.events]
        out["steps"] = self.steps
        out["assets"] = self.assets
        return out


@dataclass(frozen=True)
class Claim:
    """A job a worker just claimed: what the runtime needs to run it."""

    job_id: int
    public_id: str
    kind: str
    params: dict[str, Any]
    attempt_id: int
    attempt: int
    max_attempts: int
    deadline_at: datetime | None


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
    """What a cancel request did."""

    job: JobView
    outcome: CancelResult
    changed: bool


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
    """Its lease expired; the reaper ended it."""
    REVOKED = "revoked"
    """A forced cancel or the cancel grace ended it while it ran."""


class ResolveAs(StrEnum):
    """How a person settles an ``unknown`` job."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRY = "retry"
    CANCELLED = "cancelled"


Verdict = Literal["cancelling", "lost"]
"""A heartbeat's answer for an attempt that must stop: a cancel was requested (``cancelling``), or
the attempt no longer holds the lease (``lost``)."""

Fence = Literal["attempt", "claim", "none"]


@dataclass(frozen=True)
class Move:
    """One planned edge: from ``source`` to ``target``; ``outcome`` ends the live attempt."""

    source: State
    target: State
    reason: str | None = None
    outcome: AttemptOutcome | None = None


@dataclass(frozen=True)
class Row:
    """One job to move, with what the writer brings."""

    job_id: int
    attempt_id: int | None = None
    reason: str | None = None
    result: Any = None
    error: Any = None
    run_at: datetime | None = None


@dataclass(frozen=True)
class Moved:
    """What happened to one row."""

    job_id: int
    source: State
    target: State | None  # None: the job did not move
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.target is not None
