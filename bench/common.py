"""Shared bench helpers: a server to run against and fresh migrated databases on it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from jobs.engine.db import embedded_dsn
from jobs.engine.migrate import migrate

_keep: list[tempfile.TemporaryDirectory[str]] = []


def server_dsn() -> str:
    """``DATABASE_URL`` when set, else an embedded PostgreSQL in a temporary directory."""
    url = os.environ.get("DATABASE_URL")
    if url:
        return url
    tmp = tempfile.TemporaryDirectory(prefix="errand-bench-")
    _keep.append(tmp)  # lives as long as the process
    return embedded_dsn(Path(tmp.name) / "pgdata")


async def empty_db(server: str, name: str, *, flush: bool = True) -> str:
    """A new, empty database ``name`` on ``server`` (dropped first if it exists); returns its DSN.

    With ``flush=False`` its commits do not wait for the disk (``synchronous_commit = off`` for
    every session on it): only for the bench's figure of what the flush costs, never a setting
    Errand offers. The database is recreated on each call, so the setting never outlives it.
    """
    admin = await asyncpg.connect(server)
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.execute(f"CREATE DATABASE {name}")
        if not flush:
            await admin.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")
    finally:
        await admin.close()
    return urlunsplit(urlsplit(server)._replace(path=f"/{name}"))


async def fresh_db(server: str, name: str, *, flush: bool = True) -> str:
    """A new, migrated database ``name`` on ``server`` (:func:`empty_db`); returns its DSN."""
    dsn = await empty_db(server, name, flush=flush)
    conn = await asyncpg.connect(dsn)
    await migrate(conn)
    await conn.close()
    return dsn


def quantile(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def bulk_insert_args(
    n: int, *, kind: str, origin: dict[str, Any], group: str | None = None
) -> list[Any]:
    """The arguments ``submit_many`` sends to ``job_insert_many`` for ``n`` jobs of one kind,
    requester and origin (no keys): what the bench's server-side figures run."""
    from jobs.engine.ids import new_public_ids
    from jobs.engine.queries import engine_queries
    from jobs.engine.store.submit import bulk_arguments

    # One value per column, in jobs.engine.store.submit's _BULK_COLUMNS order.
    columns: list[list[Any]] = [
        [kind],
        ["{}"],
        ["bench"],
        [json.dumps(origin)],
        [group],
        [None],
        [1],
        [None],
        [0],
        [None],
        [None],
    ]
    query = engine_queries()["job_insert_many"]
    return query.args(bulk_arguments(new_public_ids(n), [c * n for c in columns]))
