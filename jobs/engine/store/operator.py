"""What an operator does from the dashboard beyond one job's cancel and resolve: retry a failed
job as a new job linked to it, cancel or retry every job a filter matches, and the record of
who did what (``operator_action``); and what the operator's overview reads: each kind's recent
failures, the outbox's backlog, the fleet's processes with their heartbeats.

A bulk action takes the jobs the filter matches now (at most :data:`BULK_CAP`, newest first)
and moves them in one statement through :func:`~jobs.engine.transition.transition`, as a cancel
of each would; a row a claim raced is cancelled again on its own, on the locked path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, NamedTuple

import asyncpg

from jobs.engine import policy
from jobs.engine.db import Conn
from jobs.engine.ids import new_public_ids, normalize
from jobs.engine.moves import CancelRequest, Row
from jobs.engine.records import read_typed_asset
from jobs.engine.state import Actor, State
from jobs.engine.store.requests import Requests
from jobs.engine.transition import transition
from jobs.engine.views import JobFilter, JobView
from jobs.errors import NotAllowed, UnknownJob

BULK_CAP = 10_000
"""The most jobs one bulk action touches (the count shown before it says "10,000 or more")."""

Action = Literal[
    "cancel", "force_cancel", "resolve", "retry", "pause", "resume", "bulk_cancel", "bulk_retry"
]


@dataclass(frozen=True)
class OperatorAction:
    """One thing an operator did: who, what, on which kind or job, with what details."""

    id: int
    at: datetime
    by: str
    action: str
    kind: str | None
    public_id: str | None
    detail: dict[str, Any]

    @classmethod
    def from_record(cls, r: asyncpg.Record) -> OperatorAction:
        return cls(**{k: r[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class ProcessView:
    """One long-running process of the fleet, as its last heartbeat left it."""

    name: str
    roles: list[str]
    detail: dict[str, Any]
    started_at: datetime
    seen_at: datetime
    seen_seconds_ago: float
    running: int
    """Attempts it holds now (a worker)."""

    @classmethod
    def from_record(cls, r: asyncpg.Record) -> ProcessView:
        return cls(**{k: r[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Backlog:
    """Undelivered notices: pending, dead-lettered, and the age of the oldest pending one."""

    pending: int
    dead: int
    oldest_pending_seconds: float


class Change(NamedTuple):
    """One event, as a live view needs it: its id, its job and the state it moved it to."""

    id: int
    public_id: str
    state: str


@dataclass(frozen=True)
class BulkOutcome:
    """What a bulk action did: how many jobs the filter matched (up to the cap), how many
    changed, and the jobs it made (a retry's new jobs)."""

    matched: int
    changed: int
    made: list[JobView]


class Operator(Requests):
    """``retry``, ``cancel_matching``, ``retry_matching``, ``record_action``, ``actions``, and
    the overview's ``failure_rates``, ``backlog``, ``process_seen``, ``process_gone`` and
    ``processes``."""

    async def record_action(
        self,
        by: str,
        action: Action,
        *,
        kind: str | None = None,
        job_id: int | None = None,
        detail: dict[str, Any] | None = None,
        conn: Conn | None = None,
    ) -> None:
        """Record that ``by`` did ``action`` (in ``conn``'s transaction when given)."""
        await self.sql.execute(
            conn or self.pool,
            "operator_action_insert",
            by=by,
            action=action,
            kind=kind,
            job_id=job_id,
            detail=detail or None,
        )

    async def actions(self, limit: int = 50) -> list[OperatorAction]:
        """The latest operator actions, newest first."""
        rows = await self.sql.fetch(self.pool, "operator_action_list", limit=limit)
        return [OperatorAction.from_record(r) for r in rows]

    async def actions_on(self, job_id: int) -> list[OperatorAction]:
        """The operator actions taken on one job, oldest first."""
        rows = await self.sql.fetch(self.pool, "operator_action_by_job", job_id=job_id)
        return [OperatorAction.from_record(r) for r in rows]

    async def retry(self, public_id: str, *, by: str) -> JobView:
        """A failed job again, as a new job linked to it (``retry_of``), its creation event
        naming ``by``; a job already retried returns its retry.

        Raises:
            UnknownJob: no such job. NotAllowed: the job did not fail.
        """
        job = await self.get(public_id)
        if job.state is not State.FAILED:
            raise NotAllowed(
                f"job {job.public_id} is {job.state.value}; only a failed job is retried"
            )
        made = await self._retry([job.id], by=by)
        if made:
            return made[0]
        earlier = await self.retries_of(job.id)
        if not earlier:  # it moved meanwhile: not failed any more
            raise NotAllowed(f"job {job.public_id} can no longer be retried")
        return earlier[0]

    async def _retry(self, ids: Sequence[int], *, by: str) -> list[JobView]:
        async with self.pool.acquire() as conn, conn.transaction():
            rows = await self.sql.fetch(
                conn,
                "job_retry",
                ids=list(ids),
                retryable=State.FAILED.value,
                public_ids=new_public_ids(len(ids)),
                by=by,
            )
            made = [JobView.from_record(r) for r in rows]
            for job in made:
                await self.record_action(
                    by, "retry", job_id=job.retry_of, detail={"new": job.public_id}, conn=conn
                )
        return made

    async def retries_of(self, job_id: int) -> list[JobView]:
        """The jobs an operator made to retry ``job_id``, oldest first."""
        rows = await self.sql.fetch(self.pool, "job_retries_of", id=job_id)
        return [JobView.from_record(r) for r in rows]

    async def cancel_matching(
        self, where: JobFilter, *, by: str, force: bool = False, cap: int = BULK_CAP
    ) -> BulkOutcome:
        """Cancel every job ``where`` matches that a cancel moves (forced: every live one), at
        most ``cap``, newest first, as an operator named ``by``."""
        rule = policy.FORCE_CANCEL if force else policy.cancel(Actor.OPERATOR)
        movable = _within(where, [m.source for m in rule.moves])
        if movable is None:
            return BulkOutcome(0, 0, [])
        jobs = (await self.search(movable, limit=cap)).jobs
        request = CancelRequest(by=by, reason="bulk cancel by operator")
        why = "forced" if force else None
        raced: list[str] = []
        changed = 0
        async with self.pool.acquire() as conn:
            moved = await transition(
                conn,
                rule,
                [Row(j.id, reason=why) for j in jobs],
                cancel=request,
                data={"by": by, "bulk": True},
            )
            await self.record_action(
                by,
                "bulk_cancel",
                detail={"filter": _described(where), "matched": len(jobs), "force": force},
                conn=conn,
            )
        # A raced row did not move, so the statement has no public id for it: take it from
        # the search that matched it.
        public_ids = {j.id: j.public_id for j in jobs}
        for m in moved:
            if m.raced:
                raced.append(public_ids[m.job_id])
            elif m.ok:
                changed += 1
        for public_id in raced:
            outcome = await self.cancel(
                public_id, actor=Actor.OPERATOR, by=by, reason="bulk cancel", force=force
            )
            changed += int(outcome.changed)
        return BulkOutcome(len(jobs), changed, [])

    async def retry_matching(
        self, where: JobFilter, *, by: str, cap: int = BULK_CAP
    ) -> BulkOutcome:
        """Retry every failed job ``where`` matches (at most ``cap``, newest first) that was not
        retried before, each as a new job linked to it."""
        failed = _within(where, [State.FAILED])
        if failed is None:
            return BulkOutcome(0, 0, [])
        jobs = (await self.search(failed, limit=cap)).jobs
        made = await self._retry([j.id for j in jobs], by=by) if jobs else []
        await self.record_action(
            by,
            "bulk_retry",
            detail={"filter": _described(where), "matched": len(jobs), "made": len(made)},
        )
        return BulkOutcome(len(jobs), len(made), made)

    async def failure_rates(self, kinds: Sequence[str], recent: int = 100) -> dict[str, float]:
        """Each kind's share of failures among its last ``recent`` finished jobs (kinds with
        none finished are left out)."""
        rows = await self.sql.fetch(
            self.pool,
            "kind_failure_rates",
            kinds=list(kinds),
            recent=recent,
            failed=State.FAILED.value,
        )
        return {r["kind"]: r["failed"] / r["finished"] for r in rows if r["finished"]}

    async def backlog(self) -> Backlog:
        """The outbox's undelivered notices and the delivery lag."""
        r = await self.sql.fetchrow(self.pool, "notice_counts")
        assert r is not None  # an aggregate: always one row
        return Backlog(r["pending"], r["dead"], float(r["oldest_pending_seconds"]))

    async def get_by_id(self, job_id: int) -> JobView | None:
        """A job by its internal id (a retry's link), or None when it was pruned."""
        record = await self.sql.fetchrow(self.pool, "job_get_by_id", id=job_id)
        return JobView.from_record(record) if record is not None else None

    async def state_counts(self, states: Sequence[State]) -> dict[tuple[str, str], int]:
        """``(kind, state) -> jobs`` for the jobs in ``states``."""
        rows = await self.sql.fetch(
            self.pool, "job_count_in_states", states=[s.value for s in states]
        )
        return {(r["kind"], r["state"]): r["count"] for r in rows}

    async def last_event_id(self) -> int:
        """The newest event's id (0: none yet)."""
        return int(await self.sql.fetchval(self.pool, "event_last_id"))

    async def events_since(self, after: int, limit: int = 1000) -> list[Change]:
        """The events after id ``after``, oldest first (at most ``limit``)."""
        rows = await self.sql.fetch(self.pool, "event_changes_since", after=after, limit=limit)
        return [Change(r["id"], r["public_id"], r["state"]) for r in rows]

    async def asset(self, public_id: str, name: str) -> tuple[str, bytes]:
        """A job's asset: its content type and content. Raises UnknownJob, KeyError."""
        public_id = normalize(public_id)
        job_id = await self.sql.fetchval(self.pool, "job_id_by_public_id", public_id=public_id)
        if job_id is None:
            raise UnknownJob(public_id)
        return await read_typed_asset(self.pool, job_id, name)

    async def process_seen(self, name: str, roles: Sequence[str], detail: dict[str, Any]) -> None:
        """A long-running process's heartbeat (its row, made on the first)."""
        await self.sql.execute(
            self.pool, "process_seen", name=name, roles=list(roles), detail=detail
        )

    async def process_gone(self, name: str, *, forget_seconds: float = 3600.0) -> None:
        """A process stopped: its row goes, with those not seen for ``forget_seconds``."""
        await self.sql.execute(self.pool, "process_gone", name=name, forget_seconds=forget_seconds)

    async def processes(self) -> list[ProcessView]:
        """The fleet's processes, with their last heartbeat and the attempts each holds."""
        return [ProcessView.from_record(r) for r in await self.sql.fetch(self.pool, "process_list")]


def _within(where: JobFilter, states: Sequence[State]) -> JobFilter | None:
    """``where`` narrowed to ``states`` (None: it asks for none of them)."""
    keep = tuple(s for s in states if not where.states or s in where.states)
    return replace(where, states=keep) if keep else None


def _described(where: JobFilter) -> dict[str, Any]:
    """A filter as the action's record keeps it."""
    return {
        "states": [s.value for s in where.states],
        "kind": where.kind,
        "requester": where.requester,
        "origin_group": where.origin_group,
        "since": where.since.isoformat() if where.since else None,
        "until": where.until.isoformat() if where.until else None,
        "text": where.text,
    }
