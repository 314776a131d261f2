"""The migrated database's ``job_state`` enum holds exactly the engine's states."""

from __future__ import annotations

import asyncpg

from jobs.engine.state import State


async def test_the_job_state_enum_matches_state(pool: asyncpg.Pool) -> None:
    values = await pool.fetchval("SELECT enum_range(NULL::job_state)::text[]")
    assert sorted(values) == sorted(s.value for s in State)
