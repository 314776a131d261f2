"""The system's settlements: expired leases, unacknowledged cancels and passed deadlines.

Any worker may reap; ``SKIP LOCKED`` plus the transition's compare-and-set mean two reapers never
both act on one job. What each settlement does is :mod:`jobs.engine.policy`'s; how an expired
lease is read (a crash, an outage, a blind effect in flight) is decided here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from jobs.engine import policy
from jobs.engine.moves import AttemptOutcome as Out
from jobs.engine.moves import CancelRequest, Moved, Policy, Row
from jobs.engine.state import State as S
from jobs.engine.store.base import Base
from jobs.engine.transition import transition
from jobs.retry import backoff


class Reaper(Base):
    """``reap``."""

    def _expired(
        self, r: asyncpg.Record, now: datetime, retry_base: float, retry_cap: float
    ) -> tuple[Policy, Row, str]:
        """How a running job whose lease expired moves (no cancel, no blind effect in flight).

        The database restarting after the attempt's last heartbeat means the lease was lost to
        an outage (``lease_lost``); otherwise the worker is taken as crashed (``abandoned``).
        Neither uses up an attempt unless the kind counts crashes. The job runs again when its
        kind is retry-safe or it saved a checkpoint to resume from; otherwise nobody can say
        how far it got, and it becomes ``unknown``.
        """
        spec = self.registry.find(r["kind"])
        # A kind this process does not know: only retry-safe kinds have more than one attempt.
        retry_safe = spec.retry_safe if spec is not None else r["max_attempts"] > 1
        outage = bool(r["database_restarted"])
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

    async def reap(
        self,
        *,
        cancel_grace_seconds: float,
        batch: int = 100,
        retry_base: float = 1.0,
        retry_cap: float = 300.0,
    ) -> dict[str, int]:
        """Settle expired leases, unacknowledged cancels and passed deadlines; counts by what
        was done."""
        counts: dict[str, int] = {}

        def count(key: str, moved: list[Moved]) -> None:
            counts[key] = counts.get(key, 0) + sum(m.ok for m in moved)

        due = await self.sql.fetchval(self.pool, "reaper_due", grace_seconds=cancel_grace_seconds)
        if not due:
            return counts  # the usual round: one statement, no transaction
        now = datetime.now(UTC)
        async with self.pool.acquire() as conn, conn.transaction():
            for r in await self.sql.fetch(conn, "job_expired_leases", limit=batch):
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
                count("timed_out", await transition(conn, policy.DEADLINE, rows, cancel=deadline))
        return {k: v for k, v in counts.items() if v}
