"""The operator's reads and writes of the job tables: scrape-time gauges, a job's effects and
notices for its timeline, the outbox's dead letters, and the deletes of retention.

Part of the store (every SQL statement about jobs lives in :mod:`jobs.engine`); the policies
around them (what may be pruned, how a timeline reads) live in :mod:`jobs.ops.inspect`. Nothing
here changes a job's state.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import asyncpg

from jobs.engine.queries import q
from jobs.engine.state import State


@dataclass
class Gauges:
    """What the database holds now, for ``/metrics``."""

    jobs: dict[tuple[str, str], int] = field(default_factory=dict)  # (state, kind) -> count
    queue_lag_seconds: float = 0.0
    outbox: dict[str, int] = field(default_factory=dict)  # pending, dead
    outbox_oldest_pending_seconds: float = 0.0


async def read_gauges(pool: asyncpg.Pool, within: float) -> Gauges:
    """Read the gauges in one read-only transaction bounded by ``within`` seconds.

    Raises:
        OSError, TimeoutError, asyncpg errors: the database could not answer in time.
    """
    out = Gauges()
    async with pool.acquire(timeout=within) as conn, conn.transaction(readonly=True):
        await conn.execute(f"SET LOCAL statement_timeout = {int(within * 1000)}")
        for r in await conn.fetch(q("metrics_job_count_by_state_kind")):
            out.jobs[(r["state"], r["kind"])] = r["count"]
        out.queue_lag_seconds = float(
            await conn.fetchval(q("metrics_queue_lag"), State.QUEUED.value)
        )
        row = await conn.fetchrow(q("metrics_outbox"))
        assert row is not None
        out.outbox = {"pending": row["pending"], "dead": row["dead"]}
        out.outbox_oldest_pending_seconds = float(row["oldest_pending_seconds"])
    return out


async def effects_of(pool: asyncpg.Pool, job_id: int) -> list[asyncpg.Record]:
    """A job's guarded side effects, oldest first."""
    return list(await pool.fetch(q("effect_list_by_job"), job_id))


async def notices_of(pool: asyncpg.Pool, job_id: int) -> list[asyncpg.Record]:
    """A job's outbox notices, oldest first."""
    return list(await pool.fetch(q("outbox_list_by_job"), job_id))


async def list_notices(
    pool: asyncpg.Pool, status: str | None, public_id: str | None, limit: int
) -> list[asyncpg.Record]:
    """Notices by status (``dead``, ``pending``, ``delivered``; None: any), newest first."""
    return list(await pool.fetch(q("outbox_list"), status, public_id, limit))


async def retry_dead_notices(pool: asyncpg.Pool, ids: list[int] | None) -> list[int]:
    """Give dead-lettered notices another delivery (``None``: every dead one); all or nothing.

    Raises:
        ValueError: an id that does not name a dead-lettered notice; nothing changed.
    """
    async with pool.acquire() as conn, conn.transaction():
        if ids is not None:
            found = {r["id"]: r["dead"] for r in await conn.fetch(q("outbox_get_many"), ids)}
            for notice in ids:
                if notice not in found:
                    raise ValueError(f"no notice {notice}")
                if not found[notice]:
                    raise ValueError(f"notice {notice} is not dead-lettered")
        return [r["id"] for r in await conn.fetch(q("outbox_retry_dead"), ids)]


async def prunable(
    pool: asyncpg.Pool,
    older_than_seconds: float,
    with_dead_notices: bool,
    terminal: Collection[State],
    limit: int | None = None,
) -> list[asyncpg.Record]:
    """Jobs in ``terminal`` states that retention lets go (id, public_id, asset paths)."""
    states = sorted(s.value for s in terminal)
    return list(
        await pool.fetch(q("job_prunable"), older_than_seconds, with_dead_notices, states, limit)
    )


async def prune_batch(
    pool: asyncpg.Pool,
    older_than_seconds: float,
    with_dead_notices: bool,
    terminal: Collection[State],
    batch: int,
) -> tuple[list[asyncpg.Record], set[int]]:
    """Delete up to ``batch`` prunable jobs in one transaction.

    Returns:
        The jobs found prunable and the ids actually deleted (a job that moved meanwhile
        stays).
    """
    states = sorted(s.value for s in terminal)
    async with pool.acquire() as conn, conn.transaction():
        rows = await conn.fetch(
            q("job_prunable"), older_than_seconds, with_dead_notices, states, batch
        )
        if not rows:
            return [], set()
        deleted = await conn.fetch(q("job_delete_many"), [r["id"] for r in rows], states)
    return list(rows), {r["id"] for r in deleted}
