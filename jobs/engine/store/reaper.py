"""The system's settlements: expired leases, unacknowledged cancels, passed deadlines and
waiting jobs whose timer passed.

Any worker may reap; ``SKIP LOCKED`` plus the transition's compare-and-set mean two reapers never
both act on one job. What each settlement does is :mod:`jobs.engine.policy`'s; how an expired
lease is read (a crash, an outage, a blind effect in flight) is decided here. An outage never
counts against a lease: a reaper reaps only what it watched run out, with the database there,
for a whole lease (:class:`ReaperWatch`; docs/state-machine.md, "An outage longer than the lease").
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import asyncpg

from jobs.engine import policy
from jobs.engine.db import Conn
from jobs.engine.mail import QuestionStatus, WaitFor
from jobs.engine.moves import AttemptOutcome as Out
from jobs.engine.moves import CancelRequest, Moved, Policy, Row
from jobs.engine.state import Actor
from jobs.engine.state import State as S
from jobs.engine.store.base import Base
from jobs.engine.transition import close_questions, transition
from jobs.retry import backoff


class ReaperWatch:
    """What a reaper that runs every ``period`` seconds has seen of the database.

    ``since`` is when, by the database's clock, it last began to see the database without a
    gap: at its first round, or after a gap longer than :attr:`blind_after` (an outage it could
    not see through: a round missed, or a statement that hung). A lease runs out no earlier than
    one lease after ``since``, so every attempt alive through an outage has a whole lease to
    heartbeat once the database is back. ``outage_end`` is ``since`` when a gap began it: an
    attempt last heard of before it lost its lease to the outage (``lease_lost``), not to a
    crash. A reaper that just started knows of no outage, but has not watched the leases
    either: it grants the grace too.
    """

    def __init__(self, period: float) -> None:
        # A round missed, and more than a second of lag: a busy event loop is no outage.
        self.blind_after = period + max(period, 1.0)
        self.since: datetime | None = None
        self.outage_end: datetime | None = None
        self._done_at: float | None = None  # time.monotonic() at the end of the last round

    def saw(self, at: datetime, started: float, elapsed: float) -> None:
        """A round's first statement reached the database at ``at`` (its clock), sent at
        ``started`` (``time.monotonic()``) and answered ``elapsed`` seconds later."""
        back = at + timedelta(seconds=elapsed)
        if self.since is None:
            self.since = back
        elif (
            self._done_at is None
            or started - self._done_at > self.blind_after
            or elapsed > self.blind_after
        ):
            self.since = self.outage_end = back

    def done(self) -> None:
        """The round got through to its end."""
        self._done_at = time.monotonic()


class Reaper(Base):
    """``reap``."""

    def _expired(
        self, r: asyncpg.Record, now: datetime, retry_base: float, retry_cap: float
    ) -> tuple[Policy, Row, str]:
        """How a running job whose lease expired moves (no cancel, no blind effect in flight).

        An attempt last heard of before an outage (the database restarted, or the reaper saw a
        gap, after its last heartbeat) lost its lease to it (``lease_lost``); otherwise the
        worker is taken as crashed (``abandoned``).
        Neither uses up an attempt unless the kind counts crashes. The job runs again when its
        kind is retry-safe or it saved a checkpoint to resume from; otherwise nobody can say
        how far it got, and it becomes ``unknown``.
        """
        spec = self.registry.find(r["kind"])
        # A kind this process does not know: only retry-safe kinds have more than one attempt.
        retry_safe = spec.retry_safe if spec is not None else r["max_attempts"] > 1
        outage = bool(r["outage"])
        charge = spec is not None and spec.count_crashes and not outage
        outcome = Out.LEASE_LOST if outage else Out.ABANDONED
        lost = "lease lost in a database outage" if outage else "lease expired"
        row = Row(r["id"], attempt_id=r["attempt_id"])
        if charge and r["failures"] + 1 >= r["max_attempts"]:
            reason = f"{lost}; no attempts left"
            return policy.expired(S.FAILED, reason, outcome, charge=True), row, "failed"
        if not (retry_safe or r["has_checkpoint"]):
            reason = "worker lost mid-run; it cannot safely run again from the start"
            return policy.expired(S.UNKNOWN, reason, outcome, charge=charge), row, "unknown"
        delay = backoff(r["failures"] + 1 if charge else 1, base=retry_base, cap=retry_cap)
        row = Row(r["id"], attempt_id=r["attempt_id"], run_at=now + timedelta(seconds=delay))
        reason = f"{lost}; " + ("resuming" if r["has_checkpoint"] else "retrying")
        return policy.expired(S.QUEUED, reason, outcome, charge=charge), row, "retried"

    async def _wake_due(self, conn: Conn, now: datetime, batch: int) -> list[Moved]:
        """Queue the waiting jobs whose timer passed (due ``now``, the database's clock); the
        question each waited for times out, with its event."""
        due = await self.sql.fetch(conn, "job_waits_due", limit=batch)
        if not due:
            return []
        said = {
            WaitFor.QUESTION: "no answer in time",
            WaitFor.MESSAGE: "no message in time",
            WaitFor.TIME: "its time came",
        }
        rows = [Row(r["id"], reason=said[WaitFor(r["wait_for"])], run_at=now) for r in due]
        moved = await transition(conn, policy.wake(Actor.SYSTEM), rows)
        asked = [r for r in due if r["wait_for"] == WaitFor.QUESTION]
        await close_questions(
            conn,
            [r["id"] for r in asked],
            keys=[r["wait_key"] for r in asked],
            status=QuestionStatus.TIMED_OUT,
            reason="no answer in time",
            actor=Actor.SYSTEM,
        )
        return moved

    async def reap(
        self,
        *,
        cancel_grace_seconds: float,
        batch: int = 100,
        retry_base: float = 1.0,
        retry_cap: float = 300.0,
        watch: ReaperWatch | None = None,
    ) -> dict[str, int]:
        """Settle expired leases, unacknowledged cancels and passed deadlines; counts by what
        was done.

        Args:
            watch: a periodic reaper's memory of the database (kept by the caller, one per
                reaping loop), so that no outage it could not see through counts against a
                lease. None: a one-off round, whose caller vouches that the database was there
                (only a restart of the server is then granted the grace).
        """
        counts: dict[str, int] = {}

        def count(key: str, moved: list[Moved]) -> None:
            counts[key] = counts.get(key, 0) + sum(m.ok for m in moved)

        started = time.monotonic()
        first = await self.sql.fetchrow(
            self.pool,
            "reaper_due",
            grace_seconds=cancel_grace_seconds,
            grace_from=watch.since if watch else None,
        )
        assert first is not None  # one row, always
        if watch is not None:
            watch.saw(first["at"], started, time.monotonic() - started)
        if not first["due"]:
            if watch is not None:
                watch.done()
            return counts  # the usual round: one statement, no transaction
        now = datetime.now(UTC)
        async with self.pool.acquire() as conn, conn.transaction():
            expired = await self.sql.fetch(
                conn,
                "job_expired_leases",
                limit=batch,
                grace_from=watch.since if watch else None,
                outage_end=watch.outage_end if watch else None,
                seen_at=first["at"] if watch else None,
                blind_after=watch.blind_after if watch else None,
            )
            for r in expired:
                row = Row(r["id"], attempt_id=r["attempt_id"])
                if r["state"] == S.CANCELLING:
                    reason = "timed_out" if r["cancel_reason"] == "timed_out" else "forced"
                    rule, key = policy.cancel_forced(reason, Out.ABANDONED), "cancel_forced"
                elif r["blind_effect_in_flight"]:
                    rule, key = policy.LOST_WITH_EFFECT, "unknown"
                else:
                    rule, row, key = self._expired(r, now, retry_base, retry_cap)
                count(key, await transition(conn, rule, [row]))
            overdue = await self.sql.fetch(
                conn, "job_cancel_overdue", grace_seconds=cancel_grace_seconds, limit=batch
            )
            for r in overdue:
                reason = "timed_out" if r["cancel_reason"] == "timed_out" else "forced"
                rule = policy.cancel_forced(reason, Out.REVOKED)
                count(
                    "cancel_forced", await transition(conn, rule, [Row(r["id"], r["attempt_id"])])
                )
            late = await self.sql.fetch(conn, "job_past_deadline", limit=batch)
            if late:
                deadline = CancelRequest(by="system", reason="timed_out")
                rows = [Row(r["id"]) for r in late]
                moved = await transition(
                    conn,
                    policy.DEADLINE,
                    rows,
                    cancel=deadline,
                    closing="the job's deadline passed",
                )
                count("timed_out", moved)
            count("woken", await self._wake_due(conn, first["at"], batch))
        if watch is not None:
            watch.done()
        return {k: v for k, v in counts.items() if v}
