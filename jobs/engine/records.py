"""The runtime's records of one attempt: its steps, the job's usage, its effects and its assets.

Part of the store (:mod:`jobs.engine.store` keeps the job record itself); split out because these
rows are written by the handler runtime (:mod:`jobs.runtime.step`, :mod:`jobs.runtime.effect`,
:mod:`jobs.runtime.asset`) rather than by the transition table. Every write is fenced by the
attempt: it lands only while the attempt holds the job's lease, and otherwise raises
:class:`~jobs.errors.LeaseLost` and writes nothing.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import asyncpg

from jobs.engine.db import Conn
from jobs.engine.queries import engine_queries
from jobs.errors import LeaseLost

_SQL = engine_queries()


class StepOutcome(StrEnum):
    """How a step ended (the ``step.outcome`` column)."""

    OK = "ok"
    FAILED = "failed"
    BUDGET_EXCEEDED = "budget_exceeded"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    """Cut short by a worker stop, a lost lease or a crash: it runs again, uncounted."""


class EffectStatus(StrEnum):
    """Where an effect is (the ``effect.status`` column)."""

    INTENT = "intent"  # recorded before ``do`` runs; still there: the outcome is in doubt
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class EffectBegun:
    """What :meth:`AttemptRecords.effect_begin` found for a key.

    ``done``: an earlier attempt did it (``outcome`` is what it returned); ``in_doubt``: an intent
    without an outcome and no person resolved it since (nothing was written); otherwise the
    intent of this attempt is now recorded and the effect may run.
    """

    done: bool = False
    in_doubt: bool = False
    outcome: Any = None


@dataclass(frozen=True)
class JobUsage:
    """A job's usage so far (all attempts) as stored, and how many steps it opened."""

    usage: dict[str, Any]
    steps: int


class AttemptRecords:
    """Fenced reads and writes of one attempt's steps, effects and assets."""

    def __init__(self, pool: asyncpg.Pool, job_id: int, attempt_id: int, public_id: str) -> None:
        self.pool = pool
        self.job_id = job_id
        self.attempt_id = attempt_id
        self.public_id = public_id

    async def _lock(self, conn: Conn) -> None:
        """Lock the job against state changes while this attempt writes; LeaseLost when it no
        longer holds the lease."""
        if (
            await _SQL.fetchval(
                conn, "job_lock_for_attempt", job_id=self.job_id, attempt_id=self.attempt_id
            )
            is None
        ):
            raise LeaseLost(self.public_id)

    async def _record_intent(self, conn: Conn, key: str, has_lookup: bool) -> None:
        await _SQL.execute(
            conn,
            "effect_record_intent",
            job_id=self.job_id,
            attempt_id=self.attempt_id,
            key=key,
            has_lookup=has_lookup,
        )

    # -- steps and usage ------------------------------------------------------------------

    async def job_usage(self) -> JobUsage:
        """The job's usage and step count so far (all attempts)."""
        row = await _SQL.fetchrow(self.pool, "job_usage_get", job_id=self.job_id)
        if row is None:
            return JobUsage({}, 0)
        return JobUsage(dict(row["usage"] or {}), int(row["steps"]))

    async def step_start(self, name: str) -> tuple[int, int]:
        """Open the job's next step; returns its id and number. Raises LeaseLost."""
        row = await _SQL.fetchrow(
            self.pool, "step_start", job_id=self.job_id, attempt_id=self.attempt_id, name=name
        )
        if row is None:
            raise LeaseLost(self.public_id)
        return int(row["id"]), int(row["number"])

    async def step_end(
        self,
        step_id: int,
        usage: dict[str, Any],
        outcome: StepOutcome,
        error: str | None,
        job_usage: dict[str, Any],
    ) -> None:
        """Close a step with its usage and outcome, and write the job's usage, together."""
        async with self.pool.acquire() as conn, conn.transaction():
            await _SQL.execute(
                conn, "step_end", id=step_id, usage=usage, outcome=outcome.value, error=error
            )
            await _SQL.execute(
                conn,
                "job_set_usage",
                job_id=self.job_id,
                attempt_id=self.attempt_id,
                usage=job_usage,
            )

    # -- checkpoints and time -----------------------------------------------------------

    async def save_checkpoint(
        self, state: Any, job_usage: dict[str, Any] | None, mailbox_read: int | None = None
    ) -> None:
        """Save the handler's state, with the job's usage so far and how far it read its
        mailbox (None: as saved before), in one fenced statement.

        Raises:
            LeaseLost: nothing was written.
        """
        row = await _SQL.fetchrow(
            self.pool,
            "job_save_checkpoint",
            job_id=self.job_id,
            attempt_id=self.attempt_id,
            state=state,
            usage=job_usage,
            mailbox_read=mailbox_read,
        )
        if row is None:
            raise LeaseLost(self.public_id)

    async def seconds_spent(self) -> float:
        """Wall time the job's earlier attempts ran (the per-job time bound covers them all)."""
        spent = await _SQL.fetchval(
            self.pool, "attempt_seconds_spent", job_id=self.job_id, attempt_id=self.attempt_id
        )
        return float(spent or 0.0)

    # -- effects --------------------------------------------------------------------------

    async def effect_begin(
        self, key: str, *, has_lookup: bool, ran_here: bool = False
    ) -> EffectBegun:
        """Look up the effect ``key`` and, unless it is done or in doubt, record the intent.

        An intent left by an earlier attempt is in doubt unless a person resolved the job as a
        retry after it was recorded (they took responsibility: it runs again). An intent of this
        attempt is in doubt only when ``ran_here`` (its ``do`` already ran in this attempt).

        Raises:
            LeaseLost: nothing was recorded.
        """
        async with self.pool.acquire() as conn, conn.transaction():
            await self._lock(conn)
            row = await _SQL.fetchrow(conn, "effect_get", job_id=self.job_id, key=key)
            if row is not None and row["status"] == EffectStatus.DONE:
                return EffectBegun(done=True, outcome=row["outcome"])
            in_doubt = row is not None and row["status"] == EffectStatus.INTENT
            own = row is not None and row["attempt_id"] == self.attempt_id
            if in_doubt and own and not ran_here:
                # This attempt's own intent, from a write retried through an outage whose
                # commit landed: ``do`` has not run in this attempt, so nothing is in doubt.
                in_doubt = False
            if (
                row is not None
                and in_doubt
                and await _SQL.fetchval(
                    conn, "event_resolved_retry_since", job_id=self.job_id, since=row["created_at"]
                )
            ):
                in_doubt = False
            if in_doubt:
                return EffectBegun(in_doubt=True)
            await self._record_intent(conn, key, has_lookup)
        return EffectBegun()

    async def effect_arm(self, key: str, *, has_lookup: bool) -> None:
        """Record the intent again (a reconciled "not done" is about to run). Raises LeaseLost."""
        async with self.pool.acquire() as conn, conn.transaction():
            await self._lock(conn)
            await self._record_intent(conn, key, has_lookup)

    async def effect_end(
        self, key: str, status: EffectStatus, outcome: Any, error: str | None
    ) -> None:
        """Record how an effect ended. Raises LeaseLost."""
        async with self.pool.acquire() as conn, conn.transaction():
            await self._lock(conn)
            await _SQL.execute(
                conn,
                "effect_record_outcome",
                job_id=self.job_id,
                key=key,
                status=status.value,
                outcome=outcome,
                error=error,
                attempt_id=self.attempt_id,
            )

    # -- assets ---------------------------------------------------------------------------

    async def asset_put(
        self,
        name: str,
        content_type: str,
        size: int,
        *,
        data: bytes | None = None,
        move: tuple[Path, Path] | None = None,
    ) -> None:
        """Store (or replace) an asset: inline ``data``, or a file moved from ``move[0]`` (a
        temporary file) to ``move[1]`` (its place) while the lease is held.

        Raises:
            LeaseLost: nothing was kept and no file was moved.
        """
        path = move[1] if move is not None else None
        async with self.pool.acquire() as conn, conn.transaction():
            # The file takes its place only while this attempt holds the lease (the row lock
            # keeps it from moving meanwhile): a stale attempt must not replace, or remove, the
            # file of the current one.
            await self._lock(conn)
            # A retry after an outage whose first try moved the file finds it in place.
            if move is not None and move[0].exists():
                os.replace(*move)
            row = await _SQL.fetchrow(
                conn,
                "asset_put",
                job_id=self.job_id,
                attempt_id=self.attempt_id,
                name=name,
                content_type=content_type,
                size=size,
                data=data,
                path=str(path) if path is not None else None,
            )
        if row is None:
            raise LeaseLost(self.public_id)


async def read_asset(pool: asyncpg.Pool, job_id: int, name: str) -> bytes:
    """An asset's content. Raises KeyError when the job has no asset of that name."""
    return (await read_typed_asset(pool, job_id, name))[1]


async def read_typed_asset(pool: asyncpg.Pool, job_id: int, name: str) -> tuple[str, bytes]:
    """An asset's content type and content, from one read. Raises KeyError when the job has
    no asset of that name."""
    row = await _SQL.fetchrow(pool, "asset_get", job_id=job_id, name=name)
    if row is None:
        raise KeyError(name)
    if row["data"] is not None:
        return row["content_type"], bytes(row["data"])
    return row["content_type"], await asyncio.to_thread(Path(row["path"]).read_bytes)
