"""Forward-only SQL migrations: ``migrations/NNNN_description.sql`` applied in order.

Each file runs in its own transaction and is recorded in ``errand_migration``. A session-level
advisory lock serializes processes that start together (several replicas, ``errand migrate``
beside a running worker), so exactly one applies each file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from jobs.engine.db import Conn
from jobs.logs import get_logger

log = get_logger("migrate")

# Any fixed 64-bit number; it only has to be the same in every Errand process.
ADVISORY_LOCK_ID = 0x4572_7261_6E64_0001
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    """One migration file."""

    version: int
    name: str
    sql: str


def migrations_dir() -> Path:
    """The migrations folder: the checkout's top level, or the copy packed inside a wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent / "migrations", here.parent / "_migrations"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("no migrations directory found")


def load(directory: Path | None = None) -> list[Migration]:
    """All migrations in version order; refuses gaps, duplicates and badly named files."""
    directory = directory or migrations_dir()
    found: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise ValueError(f"badly named migration {path.name}: expected NNNN_description.sql")
        found.append(Migration(int(match[1]), path.stem, path.read_text()))
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise ValueError(f"migration {migration.name}: expected version {expected:04d}")
    return found


async def applied(conn: Conn) -> list[int]:
    """Versions already applied (empty on a fresh database)."""
    exists = await conn.fetchval("SELECT to_regclass('errand_migration') IS NOT NULL")
    if not exists:
        return []
    return [r["version"] for r in await conn.fetch("SELECT version FROM errand_migration")]


async def pending(conn: Conn) -> list[Migration]:
    """Migrations not yet applied."""
    done = set(await applied(conn))
    return [m for m in load() if m.version not in done]


async def migrate(conn: Conn, applied: list[str] | None = None) -> list[str]:
    """Apply every pending migration; returns the names applied by this call.

    ``applied``, when given, gets each name as its migration commits: a caller that retries
    after a lost connection (some migrations committed, the call failed) keeps them all.
    """
    if not await pending(conn):
        # The usual start: nothing to do, and no lock to take (every CLI command and process
        # starts here; a one-shot command should not queue behind another's migration lock).
        # Applied migrations are never undone, so "none pending" cannot become false.
        return []
    await conn.execute("SELECT pg_advisory_lock($1)", ADVISORY_LOCK_ID)
    try:
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS errand_migration (
                   version integer PRIMARY KEY,
                   name text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        names: list[str] = []
        for migration in await pending(conn):
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO errand_migration (version, name) VALUES ($1, $2)",
                    migration.version,
                    migration.name,
                )
            log.info("migration.applied", migration=migration.name)
            names.append(migration.name)
            if applied is not None:
                applied.append(migration.name)
        return names
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", ADVISORY_LOCK_ID)
