"""A kind's rules in the line: its fleet-wide cap, its start rate, a pause; and what the line
looks like, per kind and for one queued job (its place).

The rules live in PostgreSQL (``kind_setting``), so every worker's next claim obeys a change
with no restart; a kind's own declaration (``@kind(concurrency=...)``) holds where the operator
set nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

import asyncpg

import jobs.limits as limits
from jobs.engine.line import Fairness, KindLine, Place, held_back
from jobs.engine.state import State
from jobs.engine.store.reads import Reads
from jobs.engine.views import JobStatus, JobView

MAX_CAP = 1_000_000
"""The largest cap an operator may set (a typo's guard, far above any fleet)."""


class KindRules(Reads):
    """``set_limit``, ``set_rate``, ``pause``, ``resume``, ``kind_lines``, ``place`` and
    ``status_in_line``."""

    def _declared(self, kind: str) -> tuple[int | None, int | None]:
        spec = self.registry.find(kind)
        return (spec.concurrency, spec.starts_per_minute) if spec else (None, None)

    async def set_limit(self, kind: str, concurrency: int | None) -> None:
        """Cap ``kind``'s running jobs across the fleet at ``concurrency`` (0 holds them all;
        None: back to the kind's own). Raises InvalidInput."""
        limits.text("kind", kind)
        if concurrency is not None:
            limits.integer("limit", concurrency, 0, MAX_CAP)
        await self.sql.execute(self.pool, "kind_set_limit", kind=kind, concurrency=concurrency)

    async def set_rate(self, kind: str, starts_per_minute: int | None) -> None:
        """Cap ``kind``'s starts per minute across the fleet (None: back to the kind's own)."""
        limits.text("kind", kind)
        if starts_per_minute is not None:
            limits.integer("starts per minute", starts_per_minute, 1, MAX_CAP)
        await self.sql.execute(
            self.pool, "kind_set_rate", kind=kind, starts_per_minute=starts_per_minute
        )

    async def pause(self, kind: str, *, by: str) -> None:
        """Hold ``kind``'s queued jobs (running ones finish); they show "paused" until resumed.
        Recorded as an operator action of ``by``."""
        await self._set_paused(kind, paused=True, by=by)

    async def resume(self, kind: str, *, by: str) -> None:
        """Let ``kind``'s queued jobs start again; recorded as an operator action of ``by``."""
        await self._set_paused(kind, paused=False, by=by)

    async def _set_paused(self, kind: str, *, paused: bool, by: str) -> None:
        limits.text("kind", kind)
        async with self.pool.acquire() as conn, conn.transaction():
            await self.sql.execute(
                conn, "kind_set_paused", kind=kind, paused=paused, by=by if paused else None
            )
            await self.sql.execute(
                conn,
                "operator_action_insert",
                by=by,
                action="pause" if paused else "resume",
                kind=kind,
                job_id=None,
                detail=None,
            )

    async def kind_lines(self, kinds: Sequence[str] = ()) -> list[KindLine]:
        """Every kind with jobs in the line or a rule, and ``kinds`` (those known here)."""
        rows = await self.sql.fetch(self.pool, "kind_lines", kinds=list(kinds))
        return [self._line(r) for r in rows]

    def _in_force(self, r: asyncpg.Record) -> tuple[int | None, int | None]:
        """A kind's limit and start rate in force: the operator's (the row's), else its own."""
        cap, rate = self._declared(r["kind"])
        return (
            r["concurrency"] if r["concurrency"] is not None else cap,
            r["starts_per_minute"] if r["starts_per_minute"] is not None else rate,
        )

    def _line(self, r: asyncpg.Record) -> KindLine:
        cap, _ = self._declared(r["kind"])
        limit, rate = self._in_force(r)
        return KindLine(
            kind=r["kind"],
            concurrency=limit,
            starts_per_minute=rate,
            paused=r["paused"],
            queued=r["queued"],
            waiting=r["waiting"],
            running=r["running"],
            started_last_minute=r["started_last_minute"],
            p50_seconds=r["p50_seconds"],
            declared_concurrency=cap,
            operator_concurrency=r["concurrency"],
        )

    async def status_in_line(self, public_id: str, fairness: Fairness | None = None) -> JobStatus:
        """:meth:`status`, with the job's place in line when it is queued. Raises UnknownJob."""
        status = await self.status(public_id)
        if status.job.state is not State.QUEUED:
            return status
        return replace(status, place=await self.place(status.job, fairness))

    async def place(self, job: JobView, fairness: Fairness | None = None) -> Place | None:
        """Where ``job`` stands in its kind's line, if it is queued (None otherwise)."""
        fair = fairness or self.fairness
        r = await self.sql.fetchrow(self.pool, "job_place", id=job.id, by_group=fair.by_group)
        if r is None:
            return None
        limit, rate = self._in_force(r)
        why = (
            "scheduled"
            if not r["paused"] and not r["due"]
            else held_back(
                paused=r["paused"],
                limit=limit,
                running=r["running"],
                rate=rate,
                started=r["started_last_minute"],
            )
        )
        return Place(
            kind=r["kind"],
            ahead=r["ahead"],
            running=r["running"],
            limit=limit,
            paused=r["paused"],
            due=r["due"],
            run_at=r["run_at"],
            starts_in=_starts_in(r, limit, rate, why),
            why=why,
        )


def _starts_in(
    r: asyncpg.Record, limit: int | None, rate: int | None, why: str | None
) -> float | None:
    """An honest guess of the seconds until the job starts, or None when none can be made.

    With ``n`` slots busy (the kind's cap, else its running jobs) ending one median run time
    apart on average, the job's turn comes once ``ahead + 1`` of them have freed: about
    ``ceil((ahead + 1) / n) - 0.5`` median run times, the running ones being half done. No
    estimate for a paused kind, without a finished job to take the median from, or with
    nothing running to make room. A start rate bounds it from below; a due time too.
    """
    if why == "paused":
        return None
    p50 = r["p50_seconds"]
    slots = limit if limit is not None else r["running"]
    waits: list[float] = []
    if not r["due"]:
        waits.append(max(0.0, (r["run_at"] - datetime.now(UTC)).total_seconds()))
    if p50 is not None and slots:
        waits.append((math.ceil((r["ahead"] + 1) / slots) - 0.5) * float(p50))
    elif r["due"]:
        return None
    if rate is not None:
        waits.append(60.0 * (r["ahead"] + 1) / rate - 60.0)
    return max(waits) if waits else None
