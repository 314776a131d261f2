"""The operator's reads and writes of the job tables: scrape-time gauges, a job's effects and
notices for its timeline, the outbox's dead letters, and the deletes of retention.

Part of the store (every SQL statement about jobs lives in :mod:`jobs.engine`); the policies
around them (what may be pruned, how a timeline reads) live in :mod:`jobs.ops.inspect`. Nothing
here changes a job's state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import asyncpg

from jobs.engine.line import held_back
from jobs.engine.notices import Notice
from jobs.engine.queries import engine_queries

_SQL = engine_queries()


@dataclass
class Gauges:
    """What the database holds now, for ``/metrics`` (``up`` False: it could not be read)."""

    up: bool = True
    jobs: dict[tuple[str, str], int] = field(default_factory=dict)  # (state, kind) -> count
    queue_lag_seconds: float = 0.0
    outbox: dict[str, int] = field(default_factory=dict)  # pending, dead
    outbox_oldest_pending_seconds: float = 0.0
    # (kind, priority, "due" or "later") -> queued jobs
    queue_depth: dict[tuple[str, int, str], int] = field(default_factory=dict)
    # (kind, why) -> due jobs held back: "paused", "at its limit", "at its start rate"
    throttled: dict[tuple[str, str], int] = field(default_factory=dict)


async def read_gauges(pool: asyncpg.Pool, within: float) -> Gauges:
    """Read the gauges in one read-only transaction bounded by ``within`` seconds.

    Raises:
        OSError, TimeoutError, asyncpg errors: the database could not answer in time.
    """
    out = Gauges()
    async with pool.acquire(timeout=within) as conn, conn.transaction(readonly=True):
        await conn.execute(f"SET LOCAL statement_timeout = {int(within * 1000)}")
        for r in await _SQL.fetch(conn, "job_count_by_state_kind"):
            out.jobs[(r["state"], r["kind"])] = r["count"]
        out.queue_lag_seconds = float(await _SQL.fetchval(conn, "job_queue_lag"))
        for r in await _SQL.fetch(conn, "job_queue_depth"):
            out.queue_depth[(r["kind"], r["priority"], "due")] = r["due"]
            out.queue_depth[(r["kind"], r["priority"], "later")] = r["later"]
        for r in await _SQL.fetch(conn, "kind_lines", kinds=[]):
            # The operator's rules (a kind's own cap is declared in code the scraper may not
            # load): a paused kind, or one at the limit or start rate set with errand kind.
            why = held_back(
                paused=r["paused"],
                limit=r["concurrency"],
                running=r["running"],
                rate=r["starts_per_minute"],
                started=r["started_last_minute"],
            )
            if why is not None and r["queued"]:
                out.throttled[(r["kind"], why)] = r["queued"]
        row = await _SQL.fetchrow(conn, "notice_counts")
        assert row is not None
        out.outbox = {"pending": row["pending"], "dead": row["dead"]}
        out.outbox_oldest_pending_seconds = float(row["oldest_pending_seconds"])
    return out


async def effects_of(pool: asyncpg.Pool, job_id: int) -> list[asyncpg.Record]:
    """A job's guarded side effects, oldest first."""
    return await _SQL.fetch(pool, "effect_list_by_job", job_id=job_id)


async def notices_of(pool: asyncpg.Pool, job_id: int) -> list[Notice]:
    """A job's notices, oldest first."""
    return [
        Notice.from_record(r) for r in await _SQL.fetch(pool, "notice_list_by_job", job_id=job_id)
    ]


class NoticeStatus(StrEnum):
    """Where a notice is on its way to its transport: what :func:`list_notices` filters by."""

    DEAD = "dead"
    """Given up on (dead-lettered): ``errand outbox retry`` delivers it again."""
    PENDING = "pending"
    DELIVERED = "delivered"


async def list_notices(
    pool: asyncpg.Pool, status: NoticeStatus | None, public_id: str | None, limit: int
) -> list[tuple[str, str, Notice]]:
    """Notices by status (None: any), newest first, each with its job's public id and kind."""
    rows = await _SQL.fetch(pool, "notice_list", status=status, public_id=public_id, limit=limit)
    return [(r["public_id"], r["kind"], Notice.from_record(r)) for r in rows]


async def retry_dead_notices(pool: asyncpg.Pool, ids: list[int] | None) -> list[int]:
    """Give dead-lettered notices another delivery (``None``: every dead one); all or nothing.

    Raises:
        ValueError: an id that does not name a dead-lettered notice; nothing changed.
    """
    async with pool.acquire() as conn, conn.transaction():
        if ids is not None:
            found = {r["id"]: r["dead"] for r in await _SQL.fetch(conn, "notice_get_many", ids=ids)}
            for notice in ids:
                if notice not in found:
                    raise ValueError(f"no notice {notice}")
                if not found[notice]:
                    raise ValueError(f"notice {notice} is not dead-lettered")
        return [r["id"] for r in await _SQL.fetch(conn, "notice_retry_dead", ids=ids)]


async def prunable(
    pool: asyncpg.Pool, older_than_seconds: float, with_dead_notices: bool, limit: int | None
) -> list[asyncpg.Record]:
    """Terminal jobs that retention lets go (id, public_id, asset paths)."""
    return await _SQL.fetch(
        pool,
        "job_prunable",
        older_than_seconds=older_than_seconds,
        with_dead_notices=with_dead_notices,
        limit=limit,
    )


async def prune_batch(
    pool: asyncpg.Pool, older_than_seconds: float, with_dead_notices: bool, batch: int
) -> tuple[list[asyncpg.Record], set[int]]:
    """Delete up to ``batch`` prunable jobs in one transaction.

    Returns:
        The jobs found prunable and the ids actually deleted (a job that moved meanwhile
        stays).
    """
    async with pool.acquire() as conn, conn.transaction():
        rows = await prunable(conn, older_than_seconds, with_dead_notices, batch)  # type: ignore[arg-type]
        if not rows:
            return [], set()
        deleted = await _SQL.fetch(conn, "job_delete_many", ids=[r["id"] for r in rows])
    return rows, {r["id"] for r in deleted}
