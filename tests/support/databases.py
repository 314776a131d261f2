"""Databases on the test server: a DSN pointed at another database, and databases created
(optionally cloned from a template) and dropped through the server's maintenance database."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import asyncpg


def with_database(dsn: str, name: str) -> str:
    """``dsn`` pointing at database ``name`` (works for host=... socket DSNs too)."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{name}"))


async def admin_execute(server_dsn: str, *statements: str) -> None:
    """Run statements on the server's maintenance database (CREATE/DROP DATABASE)."""
    admin = await asyncpg.connect(server_dsn)
    try:
        for statement in statements:
            await admin.execute(statement)
    finally:
        await admin.close()


async def create_database(server_dsn: str, name: str, template: str | None = None) -> str:
    """A new database ``name`` (replacing one of that name), cloned from ``template`` if given;
    returns its DSN."""
    clone = f" TEMPLATE {template}" if template else ""
    await admin_execute(
        server_dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", f"CREATE DATABASE {name}{clone}"
    )
    return with_database(server_dsn, name)


async def drop_database(server_dsn: str, name: str) -> None:
    """Drop database ``name``, disconnecting whoever still uses it."""
    await admin_execute(server_dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
