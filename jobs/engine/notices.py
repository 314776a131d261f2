"""Outbox delivery: how a transport turns the engine's outbox rows into notices, exactly once.

Every transition of a job with an ``origin`` writes its event as a notice, in the same statement
(see ``job_transition``), and NOTIFYs ``errand_outbox``; the ``outbox`` is the view of those events
with their delivery state (migrations/0009_notices_are_events.sql). A transport (the Discord bot)
claims a job's pending rows with a lease, delivers them in order, and records the id of what it
created; a failed delivery is retried with exponential backoff (jittered between half the base and
the ceiling, see :func:`retry_delay`), then dead-lettered with its reason. Leases make a crashed
transport's rows due again. Each lease carries its owner and a token, and every write about a
leased row is fenced by that token, as attempts are: a process that stalled past its lease while
another took the rows over records nothing for them. The transport's own idempotency (e.g.
Discord's ``enforce_nonce``) covers the window between its effect and :meth:`Outbox.done`.

A sharded transport passes ``partition=(count, ids)``: it then delivers only the jobs whose
``origin.partition`` modulo ``count`` is in ``ids`` (see docs/discord.md, sharding).

This module knows nothing about any transport: rows are selected by ``origin.transport``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from jobs.engine.queries import q
from jobs.retry import backoff

OUTBOX_CHANNEL = "errand_outbox"
"""NOTIFY channel: a transition wrote a notice."""
PROGRESS_CHANNEL = "errand_progress"
"""NOTIFY channel: a job's progress changed (payload: its public id)."""


@dataclass(frozen=True)
class OutboxRow:
    """One notice to deliver: a transition (``payload`` = from, to, reason) of one job."""

    id: int
    job_id: int
    event_id: int | None
    topic: str
    payload: dict[str, Any]
    attempts: int
    created_at: datetime
    delivered_at: datetime | None
    dead_at: datetime | None
    last_error: str | None
    external_id: str | None
    lease_token: uuid.UUID | None = None
    """The lease this row was claimed under; writes about it are fenced by it."""

    @classmethod
    def from_record(cls, r: Any) -> OutboxRow:
        return cls(**{k: r[k] for k in cls.__dataclass_fields__})

    @property
    def to_state(self) -> str | None:
        """The state the transition went to."""
        value = self.payload.get("to")
        return str(value) if value is not None else None


@dataclass(frozen=True)
class DueJob:
    """A job with pending outbox rows."""

    job_id: int
    public_id: str


def retry_delay(attempt: int, *, base: float, cap: float = 600.0) -> float:
    """Seconds before delivery attempt ``attempt + 1``: :func:`jobs.retry.backoff` with a floor
    of half the base, so a retry never comes at once."""
    return backoff(attempt, base=base, cap=cap, floor=base / 2)


class Outbox:
    """Claims, delivers, retries and dead-letters the outbox rows of one transport."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        transport: str,
        *,
        lease_seconds: float = 30.0,
        max_attempts: int = 6,
        retry_base_seconds: float = 2.0,
        owner: str = "",
        partition: tuple[int, Sequence[int]] | None = None,
    ) -> None:
        self.pool = pool
        self.transport = transport
        self.owner = owner
        """Who holds the leases this outbox takes (a process id), for operators."""
        self.partition = partition
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self.retry_base_seconds = retry_base_seconds

    async def due_jobs(self, limit: int = 100) -> list[DueJob]:
        """Jobs of this transport with rows due now, oldest first."""
        count, ids = self.partition or (0, ())
        rows = await self.pool.fetch(
            q("outbox_delivery_due_jobs"), self.transport, limit, count, list(ids)
        )
        return [DueJob(r["job_id"], r["public_id"]) for r in rows]

    async def claim(self, job_id: int) -> list[OutboxRow]:
        """Lease a job's pending rows, in order; empty when none is due or another holds them."""
        rows = await self.pool.fetch(
            q("outbox_delivery_claim"), job_id, self.lease_seconds, self.owner
        )
        return sorted((OutboxRow.from_record(r) for r in rows), key=lambda r: r.id)

    async def done(self, row: OutboxRow, external_id: str | None) -> bool:
        """Record a delivery and the id of what the transport created.

        Returns:
            False when the lease was lost (another process holds the row now).
        """
        written = await self.pool.fetchval(
            q("outbox_delivery_done"), row.id, external_id, row.lease_token
        )
        return written is not None

    async def release(self, rows: Sequence[OutboxRow], delay: float) -> None:
        """Hand rows back without counting an attempt (the transport was not ready)."""
        if rows:
            await self.pool.execute(
                q("outbox_delivery_release"),
                [r.id for r in rows],
                delay,
                [r.lease_token for r in rows],
            )

    async def failed(self, row: OutboxRow, error: str) -> bool:
        """Record a failed delivery: retry later with backoff, or dead-letter.

        Returns:
            True when the row was dead-lettered (by this call, under this lease).
        """
        error = error[:500]
        if row.attempts >= self.max_attempts:
            dead = await self.pool.fetchval(
                q("outbox_delivery_dead"), row.id, error, row.lease_token
            )
            return dead is not None
        delay = retry_delay(row.attempts, base=self.retry_base_seconds)
        await self.pool.execute(q("outbox_delivery_retry"), row.id, delay, error, row.lease_token)
        return False

    async def rows(self, job_id: int) -> list[OutboxRow]:
        """Every outbox row of a job, oldest first (for status pages)."""
        records = await self.pool.fetch(q("outbox_delivery_by_job"), job_id)
        return [OutboxRow.from_record(r) for r in records]
