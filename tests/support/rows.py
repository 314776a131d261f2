"""Reading a job's rows the way an auditor would (its events, its moves, its state), and nudging
them as time would (a lease run out); every connection of a pool held at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg


async def events(pool: asyncpg.Pool, job_id: int) -> list[dict[str, Any]]:
    """Every event of a job, oldest first."""
    rows = await pool.fetch("SELECT * FROM event WHERE job_id = $1 ORDER BY id", job_id)
    return [dict(r) for r in rows]


async def moves(pool: asyncpg.Pool, job_id: int) -> list[tuple[str | None, str]]:
    """(from, to) of every event that changed the job."""
    changes = [e for e in await events(pool, job_id) if not e["ignored"]]
    return [(e["from_state"], e["to_state"]) for e in changes]


async def expire_lease(pool: asyncpg.Pool, job_id: int) -> None:
    """Make time pass for a job's live attempt: its lease is now in the past."""
    await pool.execute(
        "UPDATE attempt SET lease_expires_at = now() - interval '1 second' "
        "WHERE job_id = $1 AND ended_at IS NULL",
        job_id,
    )


async def state(pool: asyncpg.Pool, job_id: int) -> str:
    """The job's stored state."""
    value: str = await pool.fetchval("SELECT state::text FROM job WHERE id = $1", job_id)
    return value


@asynccontextmanager
async def every_connection(pool: asyncpg.Pool) -> AsyncIterator[list[asyncpg.Connection]]:
    """Every connection the pool can hold, all acquired at once (so none is missed), released
    when the block ends."""
    conns = [await pool.acquire() for _ in range(pool.get_max_size())]
    try:
        yield conns
    finally:
        for conn in conns:
            await pool.release(conn)
