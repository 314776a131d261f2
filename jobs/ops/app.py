"""Wiring shared by the CLI and the processes: settings -> database -> migrated store."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncpg

from jobs.engine.db import claim_pool, create_pool, resolve_dsn, ride_out
from jobs.engine.line import Fairness
from jobs.engine.migrate import migrate
from jobs.engine.store import JobStore, Quotas
from jobs.secrets import register_settings
from jobs.settings import Settings

if TYPE_CHECKING:  # the registry imports the handler runtime: only commands that run it load it
    from jobs.runtime.registry import Registry

STARTUP_WAIT_SECONDS = 15.0
"""How long a starting process waits for an unavailable database before giving up."""


def load_settings(*, quiet: bool = False) -> Settings:
    """Settings from the environment, with logging configured for this command or process."""
    from jobs.logs import configure

    settings = Settings()
    # Logs, errors and output never show these, whatever line they turn up in.
    register_settings(settings)
    # One-shot commands print their answer; routine info lines (a migration applied on the way)
    # would only bury it. ERRAND_LOG_LEVEL still wins when set.
    level = "warning" if quiet and "ERRAND_LOG_LEVEL" not in os.environ else settings.log_level
    configure(level, settings.log_format, lazy=quiet)
    return settings


@dataclass
class Engine:
    """A running engine: its DSN, pool, registry and store."""

    dsn: str
    pool: asyncpg.Pool
    registry: Registry
    store: JobStore
    migrated: list[str] = field(default_factory=list)
    """The migrations this start applied (none when the database was up to date)."""


@asynccontextmanager
async def open_engine(
    settings: Settings,
    *,
    registry: Registry | None = None,
    pool_max: int | None = None,
    wait: float = STARTUP_WAIT_SECONDS,
    claims: bool = False,
) -> AsyncIterator[Engine]:
    """Start (or join) the database, apply migrations and yield the engine; with ``claims``,
    its store claims on connections of their own (:func:`jobs.engine.db.claim_pool`)."""
    register_settings(settings)  # secrets are masked by value from here on
    dsn = resolve_dsn(settings.db)
    # A process started while PostgreSQL restarts (a deploy during maintenance) waits for it
    # a little instead of exiting.
    pool = await ride_out(
        "connect",
        lambda: create_pool(
            dsn, min_size=settings.db.pool_min, max_size=pool_max or settings.db.pool_max
        ),
        within=wait,
    )
    claiming: asyncpg.Pool | None = None
    try:
        applied: list[str] = []  # across ride_out's retries: each name once it has committed

        async def migrated() -> None:
            async with pool.acquire() as conn:
                await migrate(conn, applied)

        await ride_out("migrate", migrated, within=wait)
        if registry is None:
            from jobs.kinds import default_registry  # the kinds' imports: only when needed

            registry = default_registry(settings.extra_kinds)
        quotas = Quotas(settings.quota.per_requester, settings.quota.per_group)
        if claims:
            claiming = await ride_out("connect", lambda: claim_pool(dsn), within=wait)
        fairness = Fairness(settings.worker.fair_by_group, settings.worker.running_per_requester)
        store = JobStore(pool, registry, quotas=quotas, claims=claiming, fairness=fairness)
        yield Engine(dsn, pool, registry, store, applied)
    finally:
        if claiming is not None:
            await claiming.close()
        await pool.close()
