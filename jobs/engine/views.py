"""Read models of the job record: what ``status``, ``list``, a worker's claim and transports
see, each built once from the row its statement returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from jobs.engine.line import Place
from jobs.engine.mail import Message, Question
from jobs.engine.state import LIVE, State

TOPIC = "transition"
"""What most events and notices are about: a job's transition (a label of the notice metrics)."""
QUESTION_TOPIC = "question"
"""An event or notice about one of the job's questions: asked, answered, timed out or closed
(the job's state did not change)."""


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def jsonable(row: asyncpg.Record) -> dict[str, Any]:
    """A database row with its datetimes as ISO strings, ready for JSON."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in dict(row).items()}


def attempt_line(attempts: int, failures: int, max_attempts: int) -> str:
    """``attempt N · F failures (max M)``.

    The attempt number counts every start; only failures are bounded by ``max_attempts``, so
    the two are never shown as "N of M" (a job resumed after three restarts is attempt 4 with
    0 failures).
    """
    noun = "failure" if failures == 1 else "failures"
    return f"attempt {attempts} · {failures} {noun} (max {max_attempts})"


def _count(value: Any) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() else f"{number:g}"


def progress_line(progress: dict[str, Any] | None, *, running: bool = True) -> str | None:
    """The progress a handler reported, as one line: ``Step 5 of 5 · counting`` while its
    attempt runs, ``5 of 5 steps done`` once it stopped.

    ``done`` counts finished units (the bar reaches 100 % when the last one ends); the unit is
    ``step`` unless the handler named another (``command`` counts lines). The handler's note
    is what it was doing ("counting"): once no attempt runs (``running`` False: the job
    ended, sits unknown or waits for another attempt) it is no longer true, and is left out.
    None before the first report. Shared by the CLI, Discord and the sandbox page, so they
    never disagree.
    """
    if not progress or progress.get("done") is None:
        return None
    unit = str(progress.get("unit") or "step")
    total = progress.get("total")
    done = _count(progress["done"])
    if not running:
        counted = total if total else progress["done"]
        units = unit if float(counted) == 1 else f"{unit}s"
        return f"{done} of {_count(total)} {units} done" if total else f"{done} {units}"
    line = f"{unit.capitalize()} {done}"
    if total:
        line += f" of {_count(total)}"
    note = " ".join(str(progress.get("note") or "").split())
    return f"{line} · {note}" if note else line


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
    # Attempts that used up one of max_attempts (handler failures, counted crashes); a release
    # on shutdown, a lease lost in an outage or an ordinary crash is an attempt, not a failure.
    failures: int = 0
    # -10 to 10, higher first (docs/state-machine.md, "The claim's order").
    priority: int = 0
    # Read from its attempts (job_run_time, migration 0015) by the statements that show one job
    # (job_get, notice_round); None from those that list jobs.
    run_seconds: float | None = None
    """How long its attempts ran: its run time, without the waits its wall time counts."""
    heartbeat_at: datetime | None = None
    """When the worker of its current attempt was last heard from (None: no attempt holds it)."""
    # The job's last park (docs/state-machine.md, "Waiting"): what it waits for while waiting
    # ("question", "message", "time"), the question's key and words, until when, since when.
    wait_for: str | None = None
    wait_key: str | None = None
    wait_text: str | None = None
    wait_until: datetime | None = None
    wait_since: datetime | None = None
    retry_of: int | None = None
    """The job this one retries (an operator's retry; migration 0022), by internal id."""
    traceparent: str | None = None
    """The W3C traceparent of the span that submitted it (jobs/traces.py; None: traces off)."""

    @classmethod
    def from_record(cls, r: Any) -> JobView:
        values = {k: r[k] for k in _JOB_COLUMNS}
        values["state"] = State(values["state"])
        values.update({k: r.get(k) for k in _OPTIONAL_FIELDS})
        return cls(**values)

    @property
    def attempt_line(self) -> str:
        """The attempt count the way every transport shows it: "attempt 3 · 0 failures"."""
        return attempt_line(self.attempts, self.failures, self.max_attempts)

    @property
    def progress_line(self) -> str | None:
        """The one progress line of every transport ("Step 5 of 5 · counting" while an
        attempt runs, "5 of 5 steps done" once none does), or None."""
        return progress_line(self.progress, running=self.state in LIVE)

    @property
    def waiting(self) -> dict[str, Any] | None:
        """What a waiting job waits for and until when (None unless it is waiting), as
        ``--json`` shows it: ``for`` (question, message, time), the question's ``key`` and
        words, ``until`` (None: no timer) and ``since``."""
        if self.state is not State.WAITING:
            return None
        return {
            "for": self.wait_for,
            "key": self.wait_key,
            "question": self.wait_text,
            "until": _iso(self.wait_until),
            "since": _iso(self.wait_since),
        }

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
            "failures": self.failures,
            "max_attempts": self.max_attempts,
            "priority": self.priority,
            "progress": self.progress,
            "progress_line": self.progress_line,
            "waiting": self.waiting,
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


_OPTIONAL_FIELDS = ("run_seconds", "heartbeat_at", "retry_of", "traceparent")
"""What a :class:`JobView` reads only where its statement returns it: the job's run time from
its attempts, and the columns statements that name theirs leave out."""
_JOB_COLUMNS = tuple(k for k in JobView.__dataclass_fields__ if k not in _OPTIONAL_FIELDS)
"""The job table's columns a :class:`JobView` holds (every other field)."""


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
    topic: str = TOPIC
    """``transition``, or ``question`` (one of its questions was asked, answered or closed;
    the state did not change)."""

    @property
    def is_question(self) -> bool:
        """About one of the job's questions, not a change of its state."""
        return self.topic == QUESTION_TOPIC

    @classmethod
    def from_record(cls, r: Any) -> EventView:
        return cls(
            topic=r["topic"],
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
            "topic": self.topic,
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
    # Where a queued job stands in its kind's line (None when it is not queued).
    place: Place | None = None
    # Its conversation: the questions it asked and its mailbox.
    questions: list[Question] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = self.job.to_json()
        out["place"] = self.place.to_json() if self.place else None
        out["attempt_history"] = [a.to_json() for a in self.attempts]
        out["events"] = [e.to_json() for e in self.events]
        out["steps"] = self.steps
        out["assets"] = self.assets
        out["questions"] = [q.to_json() for q in self.questions]
        out["messages"] = [m.to_json() for m in self.messages]
        return out


@dataclass(frozen=True)
class Claim:
    """A job a worker just claimed, as ``job_claim`` returns it: what the runtime needs to run
    one attempt of it, held by that attempt's :class:`~jobs.runtime.context.Context`."""

    job_id: int
    public_id: str
    kind: str
    params: dict[str, Any]
    attempt_id: int
    attempt: int
    max_attempts: int
    deadline_at: datetime | None
    failures: int = 0
    """Attempts so far that used up one of max_attempts (handler failures, counted crashes)."""
    resume_state: Any = None
    """What the handler saved with ``ctx.checkpoint(state)`` in an earlier attempt, or None."""
    since_due: timedelta | None = None
    """How long the job had been due when it was claimed (its wait to start)."""
    traceparent: str | None = None
    """The submitter's span, which this attempt's spans join (jobs/traces.py)."""

    @classmethod
    def from_record(cls, r: asyncpg.Record) -> Claim:
        return cls(
            job_id=r["id"],
            public_id=r["public_id"],
            kind=r["kind"],
            params=r["params"],
            attempt_id=r["current_attempt_id"],
            attempt=r["attempts"],
            max_attempts=r["max_attempts"],
            deadline_at=r["deadline_at"],
            failures=r["failures"],
            resume_state=r["checkpoint"],
            since_due=r["since_due"],
            traceparent=r["traceparent"],
        )


TIME_MARGIN = timedelta(minutes=10)
"""Longer than any transaction that submits jobs: how far a time filter's id bound is widened
(``job_first_id_at``, migration 0021), so a job whose id came after a later job's is found."""


@dataclass(frozen=True)
class JobFilter:
    """What an operator's job list shows: each field narrows it; None means any."""

    states: tuple[State, ...] = ()
    kind: str | None = None
    requester: str | None = None
    origin_group: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    text: str | None = None
    """Words in the task or the parameters (case-insensitive, taken literally), searched within
    a bounded number of the newest jobs the other filters match (:data:`SEARCH_SCOPE`)."""

    def params(self) -> dict[str, Any]:
        """The named parameters of ``job_listing`` (jobs/engine/sql/job.sql), without the
        text (:attr:`literal_text`)."""
        return {
            "states": [s.value for s in self.states] or None,
            "kind": self.kind or None,
            "requester": self.requester or None,
            "origin_group": self.origin_group or None,
            "since": self.since,
            "until": self.until,
            "margin": TIME_MARGIN,
        }

    @property
    def literal_text(self) -> str | None:
        """The text as an ILIKE pattern's middle, its wildcards taken literally (a search for
        "50%" finds "50%"), or None for no text."""
        text = self.text.strip() if self.text else ""
        return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") or None


SEARCH_SCOPE = 10_000
"""How many of the newest jobs the other filters match one text search reads: a search costs
at most this many rows, never the whole table (docs/performance-dashboard.md)."""


@dataclass(frozen=True)
class JobPage:
    """One page of a job list, and where the next one starts (None: this is the last)."""

    jobs: list[JobView]
    after: int | None
    """The cursor of the next page: the id the next page starts after."""
    searched: int | None = None
    """For a text search, how many jobs this page's search read (at most the scope)."""
