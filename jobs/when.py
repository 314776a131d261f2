"""When a person wants a job to run, as they type it: ``in 2h``, ``in 5 minutes``, ``09:00``,
``2026-12-24 18:00`` or an ISO time, read in their timezone (UTC unless they say).

Shared by the CLI (``--at``, ``--in``, schedules' ``--tz``) and the bot (``/summon when:``), so
both read a time the same way. A time that has passed, or a timezone nobody knows, is refused
with one line saying so.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MAX_AHEAD = timedelta(days=366)
"""The furthest ahead a job may be put off (a year): further is surely a typo."""

_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)?")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")


def zone(name: str | None) -> tzinfo:
    """The timezone named ``name`` (IANA, e.g. ``Europe/Berlin``); UTC for None.

    Raises:
        ValueError: no such timezone.
    """
    if not name:
        return UTC
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown timezone {name!r}: use an IANA name like Europe/Berlin"
        ) from None


def duration(text: str) -> float:
    """Seconds in ``2h``, ``90 minutes``, ``1h 30m``, ``45s`` (a plain number: seconds).

    Raises:
        ValueError: anything else, or nothing at all.
    """
    words = text.strip().lower().replace(",", " ").replace(" and ", " ")
    total, at = 0.0, 0
    for match in _PART.finditer(words):
        if words[at : match.start()].strip():
            break
        unit = match[2] or "s"
        if unit not in _UNITS:
            raise ValueError(f"bad duration {text!r}: unknown unit {unit!r} (use s, m, h, d, w)")
        total += float(match[1]) * _UNITS[unit]
        at = match.end()
    if at == 0 or words[at:].strip():
        raise ValueError(f"bad duration {text!r}: use e.g. 2h, 90m, 1h 30m, 45s")
    return total


def when(text: str, *, tz: tzinfo | str | None = None, now: datetime | None = None) -> datetime:
    """The moment ``text`` names, after ``now``: ``in DURATION``, ``HH:MM`` (the next such time
    in ``tz``, a timezone or its IANA name; UTC by default), or a date and time (ISO; without an
    offset, in ``tz``).

    Raises:
        ValueError: a text it cannot read, an unknown timezone, a time that has passed, or one
            more than a year off.
    """
    now = now or datetime.now(UTC)
    tz = zone(tz) if tz is None or isinstance(tz, str) else tz
    said = " ".join(text.strip().split())
    lowered = said.lower()
    if lowered.startswith("in "):
        at = now + timedelta(seconds=duration(lowered[3:]))
    elif clock := _CLOCK.match(said):
        hour, minute = int(clock[1]), int(clock[2])
        if hour > 23 or minute > 59:
            raise ValueError(f"bad time {text!r}: use HH:MM, 00:00 to 23:59")
        local = now.astimezone(tz)
        at = datetime.combine(local.date(), time(hour, minute), tz)
        if at <= now:
            at = datetime.combine(local.date() + timedelta(days=1), time(hour, minute), tz)
    else:
        try:
            at = datetime.fromisoformat(said)
        except ValueError:
            raise ValueError(
                f"bad time {text!r}: use 'in 2h', 'HH:MM' or a date and time like 2026-12-24T18:00"
            ) from None
        if at.utcoffset() is None:
            at = at.replace(tzinfo=tz)
    return ahead(at, now)


def ahead(at: datetime, now: datetime | None = None) -> datetime:
    """``at`` if it is still to come and at most a year away (in UTC).

    Raises:
        ValueError: it has passed, or it is further off than :data:`MAX_AHEAD`.
    """
    now = now or datetime.now(UTC)
    if at <= now:
        raise ValueError(f"{at.isoformat(timespec='seconds')} has already passed")
    if at - now > MAX_AHEAD:
        raise ValueError(f"{at.isoformat(timespec='seconds')} is more than a year away")
    return at.astimezone(UTC)
