"""A recurring schedule's times: its cron expression read in its timezone, with cronsim.

Why cronsim (https://pypi.org/project/cronsim/): it is small, has no dependencies, works with
``zoneinfo`` directly, and matches Debian's cron, the behaviour operators know, across DST: a
time skipped when clocks go forward runs right after the change, a time that happens twice when
they go back runs once. It is kept by Healthchecks, which monitors cron jobs for a living, and
takes an optional seconds field (6 fields), so a schedule can tick every second. croniter, the
other common choice, had a change of maintainers and a history of DST bugs; it also pulls in
python-dateutil.

Which ticks a round enqueues (:func:`ticks_to_make`): every tick due within
:data:`ON_TIME_SECONDS`, each once; of those missed longer ago (the fleet was down), none
(``skip``) or only the last (``last``, the default).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Literal

from cronsim import CronSim, CronSimError

from jobs.when import zone

ON_TIME_SECONDS = 5.0
"""A tick enqueued at most this late counts as on time; one later than that was missed (the
fleet was down or stopped), and the schedule's catch-up policy decides."""

MAX_TICKS = 1000
"""The most ticks one round looks at for one schedule (a long outage of a fast schedule)."""

CatchUp = Literal["skip", "last"]


def check_cron(expr: str) -> str:
    """``expr`` if cronsim reads it (5 fields, or 6 with seconds first). Raises ValueError."""
    try:
        CronSim(expr, datetime.now(UTC))
    except (CronSimError, ValueError, IndexError) as exc:
        raise ValueError(f"bad cron expression {expr!r}: {exc or 'unreadable'}") from None
    return " ".join(expr.split())


def next_tick(expr: str, tz: tzinfo, after: datetime) -> datetime:
    """The first tick of ``expr`` in ``tz`` strictly after ``after`` (in UTC)."""
    return next(CronSim(expr, after.astimezone(tz))).astimezone(UTC)


def ticks_to_make(
    expr: str, tz: tzinfo, due_from: datetime, now: datetime, catch_up: CatchUp
) -> tuple[list[datetime], datetime]:
    """The ticks to enqueue now, from ``due_from`` (the schedule's next tick) to ``now``, and
    the next tick after ``now``."""
    due: list[datetime] = []
    at = due_from
    while at <= now and len(due) < MAX_TICKS:
        due.append(at)
        at = next_tick(expr, tz, at)
    while at <= now:  # more than MAX_TICKS behind: the rest are missed, unseen
        at = next_tick(expr, tz, now)
    late = now - timedelta(seconds=ON_TIME_SECONDS)
    on_time = [t for t in due if t >= late]
    missed = [t for t in due if t < late]
    chosen = ([missed[-1]] if missed and catch_up == "last" else []) + on_time
    return chosen, at


@dataclass(frozen=True)
class Schedule:
    """One recurring schedule as stored."""

    name: str
    cron: str
    tz: str
    kind: str
    params: dict[str, Any]
    priority: int | None
    origin: dict[str, Any]
    origin_group: str | None
    catch_up: CatchUp
    paused_at: datetime | None
    next_at: datetime
    last_tick: datetime | None
    created_at: datetime
    created_by: str

    @classmethod
    def from_record(cls, r: Any) -> Schedule:
        return cls(**{k: r[k] for k in cls.__dataclass_fields__})

    @property
    def zone(self) -> tzinfo:
        return zone(self.tz)

    def key(self, tick: datetime) -> str:
        """The idempotency key of the job of ``tick``: one job per schedule and tick."""
        return f"schedule:{self.name}:{tick.astimezone(UTC).isoformat()}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cron": self.cron,
            "tz": self.tz,
            "kind": self.kind,
            "params": self.params,
            "priority": self.priority,
            "channel": self.origin.get("channel_id"),
            "catch_up": self.catch_up,
            "paused": self.paused_at is not None,
            "next_at": self.next_at.isoformat(),
            "last_tick": self.last_tick.isoformat() if self.last_tick else None,
            "created_by": self.created_by,
        }
