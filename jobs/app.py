"""Wiring shared by the CLI and the transports: settings -> database -> migrated store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg

from jobs.db import create_pool, resolve_dsn
from jobs.kinds import Registry, default_registry
from jobs.migrate import migrate
from jobs.settings import Settings
from jobs.store import JobStore, Quotas


@dataclass
class Engine:
    """A running engine: its DSN, pool, registry and store."""

    dsn: str
    pool: asyncpg.Pool
    registry: Registry
    store: JobStore


@asynccontextmanager
async def open_engine(
    settings: Settings, *, registry: Registry | None = None, pool_max: int | None = None
) -> AsyncIterator[Engine]:
    """Start (or join) the database, apply migrations and yield the engine."""
    dsn = resolve_dsn(settings.db)
    pool = await create_pool(
        dsn, min_size=settings.db.pool_min, max_size=pool_max or settings.db.pool_max
    )
    try:
        async with pool.acquire() as conn:
            await migrate(conn)
        registry = registry or default_registry(settings.extra_kinds)
        quotas = Quotas(settings.quota.per_requester, settings.quota.per_group)
        yield Engine(dsn, pool, registry, JobStore(pool, registry, quotas=quotas))
    finally:
        await pool.close()
