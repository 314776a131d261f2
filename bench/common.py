"""Shared bench helpers: a server to run against and fresh migrated databases on it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
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


async def fresh_db(server: str, name: str) -> str:
    """A new, migrated database ``name`` on ``server``; returns its DSN."""
    admin = await asyncpg.connect(server)
    await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    await admin.execute(f"CREATE DATABASE {name}")
    await admin.close()
    dsn = urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    conn = await asyncpg.connect(dsn)
    await migrate(conn)
    await conn.close()
    return dsn


def quantile(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]
