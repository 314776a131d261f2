"""Operator functions behind ``errand job show``, ``errand outbox ...`` and ``errand prune``.

None of them changes a job's state (state changes go through :mod:`jobs.engine.transition`):
they read
a job's whole record, give dead-lettered notices another delivery, and delete finished jobs that
the retention policy lets go.

Retention policy of :func:`prune`: a job is deleted only when it is terminal (``succeeded``,
``failed``, ``cancelled``), finished longer ago than asked, and has no undelivered notice —
neither pending nor (unless asked) dead-lettered, so a person is never left without the
"your job ended" message and an operator never loses a dead letter silently. ``queued``,
``running``, ``cancelling`` and ``unknown`` jobs are never pruned. Everything recorded with the
job goes with it (attempts, events, steps, effects, assets, notices); large assets on disk are
removed when this process can see them.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg

from jobs.engine import admin
from jobs.engine.store import JobStore
from jobs.engine.views import JobStatus, jsonable
from jobs.logs import get_logger

log = get_logger("ops")

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_duration(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``90m``, ``45s``, ``2w`` or a plain number of seconds.

    Raises:
        ValueError: anything else.
    """
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"bad duration {text!r}: use e.g. 30d, 12h, 90m, 45s")
    return float(match[1]) * _UNITS[match[2] or "s"]


# -- the timeline ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One line of a job's timeline."""

    at: datetime
    what: str  # event | attempt | step | effect | message | question | notice
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at.isoformat(), "what": self.what, "text": self.text}


@dataclass(frozen=True)
class Timeline:
    """A job's whole record, and its story in time order."""

    status: JobStatus
    effects: list[dict[str, Any]] = field(default_factory=list)
    notices: list[dict[str, Any]] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = self.status.to_json()
        out["effects"] = self.effects
        out["notices"] = self.notices
        out["timeline"] = [e.to_json() for e in self.entries]
        return out


async def timeline(store: JobStore, public_id: str) -> Timeline:
    """Everything recorded about one job, merged into one time-ordered story.

    Raises:
        jobs.errors.UnknownJob: no such job.
    """
    status = await store.status(public_id)
    job = status.job
    effects = await admin.effects_of(store.pool, job.id)
    notices = await admin.notices_of(store.pool, job.id)
    entries: list[Entry] = []
    for ev in status.events:
        if ev.is_question:  # a question asked, answered or closed: no state changed
            entries.append(Entry(ev.at, "question", f"question by {ev.actor}: {ev.reason}"))
            continue
        mark = " (ignored: stale write)" if ev.ignored else ""
        entries.append(
            Entry(
                ev.at,
                "event",
                f"{ev.from_state or '-'} -> {ev.to_state} by "
                f"{ev.actor}{mark}" + (f": {ev.reason}" if ev.reason else ""),
            )
        )
    for a in status.attempts:
        entries.append(Entry(a.started_at, "attempt", f"attempt {a.number} started on {a.worker}"))
        if a.ended_at is not None:
            entries.append(Entry(a.ended_at, "attempt", f"attempt {a.number} ended: {a.outcome}"))
        else:
            entries.append(
                Entry(
                    a.heartbeat_at,
                    "attempt",
                    f"attempt {a.number} last heartbeat; lease until "
                    f"{a.lease_expires_at.isoformat()}",
                )
            )
    for st in status.steps:
        entries.append(
            Entry(
                datetime.fromisoformat(st["started_at"]),
                "step",
                f"{st['name']} started",  # its name says which ("step 3", "model 2")
            )
        )
        if st["ended_at"]:
            entries.append(
                Entry(
                    datetime.fromisoformat(st["ended_at"]),
                    "step",
                    f"{st['name']}: {st['outcome']}" + (f" ({st['error']})" if st["error"] else ""),
                )
            )
    for e in effects:
        entries.append(Entry(e["created_at"], "effect", f"effect {e['key']}: intent recorded"))
        if e["completed_at"] is not None:
            entries.append(Entry(e["completed_at"], "effect", f"effect {e['key']}: {e['status']}"))
    for m in status.messages:
        said = f"message {m.seq} from {m.sender} ({m.actor.value}): {m.text}"
        entries.append(
            Entry(m.at, "message", said + (f" (refused: {m.refused})" if m.refused else ""))
        )
    for n in notices:
        about = "question" if n.is_question else f"transition -> {n.to_state}"
        entries.append(Entry(n.at, "notice", f"notice {n.id} ({about}) queued"))
        if n.delivered_at is not None:
            entries.append(
                Entry(
                    n.delivered_at,
                    "notice",
                    f"notice {n.id} delivered" + (f" as {n.external_id}" if n.external_id else ""),
                )
            )
        elif n.dead_at is not None:
            entries.append(
                Entry(
                    n.dead_at,
                    "notice",
                    f"notice {n.id} dead-lettered after {n.attempts} attempts: {n.error}",
                )
            )
    kinds = ("event", "attempt", "step", "effect", "message", "question", "notice")
    order = {what: n for n, what in enumerate(kinds)}
    entries.sort(key=lambda e: (e.at, order[e.what]))
    return Timeline(status, [jsonable(e) for e in effects], [n.to_json() for n in notices], entries)


# -- the outbox's dead letters ---------------------------------------------------------------


async def list_notices(
    pool: asyncpg.Pool,
    *,
    status: admin.NoticeStatus | None = admin.NoticeStatus.DEAD,
    job: str | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Notices, newest first, in their documented JSON shape with their job's public id and
    kind; ``status`` None: all of them."""
    rows = await admin.list_notices(pool, status, job.lower() if job else None, limit)
    return [{"public_id": p, "kind": k, **n.to_json()} for p, k, n in rows]


async def retry_notices(pool: asyncpg.Pool, ids: list[int] | None) -> list[int]:
    """Give dead-lettered notices another delivery (``None``: every dead one).

    Clears ``dead_at``, resets ``attempts`` and makes them due now; the transport's delivery loop
    is woken. With ids, all or nothing: one id that is unknown or not dead-lettered changes
    nothing.

    Returns:
        The ids revived.

    Raises:
        ValueError: an id that does not name a dead-lettered notice.
    """
    revived = await admin.retry_dead_notices(pool, ids)
    if revived:
        log.info("outbox.retried", notices=len(revived))
    return revived


# -- retention -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pruned:
    """What :func:`prune` did (or, dry, would do)."""

    jobs: int
    public_ids: list[str]  # at most the first 100
    files_removed: int
    dry_run: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "pruned": self.jobs,
            "jobs": self.public_ids,
            "files_removed": self.files_removed,
            "dry_run": self.dry_run,
        }


def _remove_files(paths: list[str]) -> int:
    removed = 0
    for raw in paths:
        path = Path(raw)
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            continue
        except OSError as exc:
            log.warning("prune.file_kept", path=raw, error=str(exc))
            continue
        # <data dir>/assets/<job>/: drop the job's folder once it is empty.
        if path.parent.is_dir() and not any(path.parent.iterdir()):
            shutil.rmtree(path.parent, ignore_errors=True)
    return removed


async def prune(
    pool: asyncpg.Pool,
    older_than_seconds: float,
    *,
    with_dead_notices: bool = False,
    dry_run: bool = False,
    batch: int = 500,
) -> Pruned:
    """Delete terminal jobs finished more than ``older_than_seconds`` ago (see the module's
    retention policy), in batches so no statement holds locks for long.

    Args:
        pool: the engine's pool.
        older_than_seconds: keep jobs that finished more recently than this.
        with_dead_notices: also delete jobs whose only undelivered notices are dead-lettered.
        dry_run: count and list, delete nothing.
        batch: jobs per delete statement.
    """
    if dry_run:
        rows = await admin.prunable(pool, older_than_seconds, with_dead_notices, None)
        return Pruned(len(rows), [r["public_id"] for r in rows[:100]], 0, True)
    total, files = 0, 0
    names: list[str] = []
    while True:
        rows, gone = await admin.prune_batch(pool, older_than_seconds, with_dead_notices, batch)
        if not rows:
            break
        total += len(gone)
        names += [r["public_id"] for r in rows if r["id"] in gone][: max(0, 100 - len(names))]
        paths = [p for r in rows if r["id"] in gone for p in r["paths"]]
        files += await asyncio.to_thread(_remove_files, paths) if paths else 0
        if len(rows) < batch:
            break
    log.info("prune.done", jobs=total, files=files)
    return Pruned(total, names, files, False)


__all__ = [
    "Entry",
    "Pruned",
    "Timeline",
    "list_notices",
    "parse_duration",
    "prune",
    "retry_notices",
    "timeline",
]
