"""Read models of the job record: what ``status``, ``list`` and transports see."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

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


@dataclass(frozen=True)
class CancelOutcome:
    """What a cancel request did."""

    job: JobView
    # cancelled | cancelling | already_cancelling | too_late
    outcome: str
    changed: bool
