"""The line queued jobs wait in: the rules the claim orders and limits them by, and what a job's
place in it is (docs/state-machine.md, "The claim's order").

The claim (``job_claim``) takes the higher priority first; among equals the group, then the
requester, with the fewest jobs running; then the job due first. A kind may be paused, capped
(running jobs across the fleet) and rated (starts per minute); a requester may be capped by a
setting. These types carry those rules to the claim and a job's place back to whoever shows it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

PRIORITY_MIN = -10
PRIORITY_MAX = 10


@dataclass(frozen=True)
class KindCaps:
    """What a kind declares of its limits (``@kind(concurrency=..., starts_per_minute=...)``);
    an operator's setting in PostgreSQL (``errand kind limit``) overrides it."""

    kind: str
    concurrency: int | None = None
    starts_per_minute: int | None = None


@dataclass(frozen=True)
class Fairness:
    """The fleet's rules between requesters: share slots between origin groups first
    (``by_group``), and how many jobs one requester may have running (None: no cap)."""

    by_group: bool = True
    running_per_requester: int | None = None


@dataclass
class LoneClaims:
    """Whether a claim tries ``job_claim_lone`` first (one lane, no rule: the cheap statement).

    Not for :attr:`pause_seconds` after it declined (the queue had more than one lane, or a rule
    applied): while many requesters' jobs are queued, its wasted round trip is paid once per
    pause rather than on every claim. Only a matter of cost: either statement takes the same
    jobs.
    """

    pause_seconds: float = 1.0
    _until: float = field(default=0.0, repr=False)

    def due(self) -> bool:
        """Whether the next claim tries the lone statement."""
        return time.monotonic() >= self._until

    def declined(self) -> None:
        """The lone statement declined: claim with the full one for a while."""
        self._until = time.monotonic() + self.pause_seconds


def held_back(
    *, paused: bool, limit: int | None, running: int, rate: int | None, started: int
) -> str | None:
    """Why a kind's due jobs cannot start now (paused, at its limit, at its start rate), or
    None: the one wording of the line, the metrics and ``errand kind list``."""
    if paused:
        return "paused"
    if limit is not None and running >= limit:
        return "at its limit"
    if rate is not None and started >= rate:
        return "at its start rate"
    return None


@dataclass(frozen=True)
class KindLine:
    """One kind as the line sees it: its rules and its jobs now (``errand kind list``)."""

    kind: str
    concurrency: int | None
    """The cap in force: the operator's, else the kind's own (None: none)."""
    starts_per_minute: int | None
    paused: bool
    queued: int
    """Queued jobs due now."""
    waiting: int
    """Queued jobs not due yet (delayed, scheduled, or waiting to retry)."""
    running: int
    started_last_minute: int
    p50_seconds: float | None
    """The median run time of its last 50 finished jobs (None: none finished)."""
    declared_concurrency: int | None = None
    operator_concurrency: int | None = None

    @property
    def throttled(self) -> str | None:
        """Why its due jobs cannot start now, or None."""
        return held_back(
            paused=self.paused,
            limit=self.concurrency,
            running=self.running,
            rate=self.starts_per_minute,
            started=self.started_last_minute,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "queued": self.queued,
            "waiting": self.waiting,
            "running": self.running,
            "limit": self.concurrency,
            "declared_limit": self.declared_concurrency,
            "operator_limit": self.operator_concurrency,
            "starts_per_minute": self.starts_per_minute,
            "started_last_minute": self.started_last_minute,
            "paused": self.paused,
            "throttled": self.throttled,
            "p50_seconds": self.p50_seconds,
        }


@dataclass(frozen=True)
class Place:
    """Where a queued job stands in its kind's line, and an honest estimate of its start.

    ``ahead`` counts the due jobs of its kind the claim would take first (its place is
    ``ahead + 1``); ``starts_in`` is None when no honest estimate can be made (nothing of its
    kind finished lately, nothing running to make room, or the kind is paused).
    """

    kind: str
    ahead: int
    running: int
    limit: int | None
    paused: bool
    due: bool
    run_at: datetime
    starts_in: float | None
    why: str | None
    """Why it waits beyond the jobs ahead: "paused", "at its limit", "at its start rate",
    "scheduled" (not due yet), or None."""

    @property
    def position(self) -> int:
        return self.ahead + 1

    @property
    def line(self) -> str:
        """The one line every transport shows (:func:`place_line`)."""
        return place_line(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "ahead": self.ahead,
            "kind": self.kind,
            "running": self.running,
            "limit": self.limit,
            "paused": self.paused,
            "due": self.due,
            "run_at": self.run_at.isoformat(),
            "starts_in_seconds": self.starts_in,
            "waiting_for": self.why,
        }


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def about(seconds: float) -> str:
    """An estimate the way people say one: "under a minute", "about 2 min", "about 3 h"."""
    if seconds < 60:
        return "under a minute"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"about {minutes} min"
    return f"about {round(seconds / 3600)} h"


def place_line(place: Place) -> str:
    """``3rd in line for agent · 4 of 4 running · starts in about 2 min`` (one line for the CLI,
    Discord and the progress message alike)."""
    parts = [f"{ordinal(place.position)} in line for {place.kind}"]
    if place.limit is not None:
        parts.append(f"{place.running} of {place.limit} running")
    elif place.running:
        parts.append(f"{place.running} running")
    if place.why == "paused":
        parts.append("the kind is paused")
    elif place.why == "at its start rate":
        parts.append("waiting for its start rate")
    if place.starts_in is not None:
        parts.append(f"starts in {about(place.starts_in)}")
    return " · ".join(parts)
