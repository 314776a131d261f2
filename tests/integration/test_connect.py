"""A connection whose set-up fails is closed at once, never left open for the garbage collector."""

from __future__ import annotations

import gc
import warnings
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from jobs.engine.db import connect


async def test_a_connection_whose_codec_setup_fails_is_closed_not_leaked(
    pool: Any, db_dsn: str
) -> None:
    """``connect`` runs queries after the server accepted it (Errand's codecs); when they fail
    (a server going down after accepting it, as in a restart; here: a role refused the catalog
    function they use) the error reaches the caller and the connection is already closed: no
    backend of it is left, and no "unclosed connection" warning follows."""
    await pool.execute("DROP ROLE IF EXISTS errand_limited")  # left by an interrupted run
    await pool.execute("CREATE ROLE errand_limited LOGIN")
    await pool.execute("REVOKE EXECUTE ON FUNCTION pg_catalog.to_regtype(text) FROM PUBLIC")
    parts = urlsplit(db_dsn)
    host = parts.netloc.rsplit("@", 1)[-1]
    limited = urlunsplit(parts._replace(netloc=f"errand_limited@{host}"))
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await connect(limited)
            gc.collect()
        assert [str(w.message) for w in seen if w.category is ResourceWarning] == []
        left = await pool.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'errand_limited'"
        )
        assert left == 0
    finally:
        await pool.execute("GRANT EXECUTE ON FUNCTION pg_catalog.to_regtype(text) TO PUBLIC")
        await pool.execute("DROP ROLE errand_limited")
