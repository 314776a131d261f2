"""The bot's named SQL (``bot/sql/*.sql``, one file per table), loaded once by the engine's loader.

``sql`` runs them by name with named parameters, as the engine's store does:
``sql.fetchrow(pool, "binding_get", job_id=...)``; a missing or unknown parameter fails before
anything is sent. ``{terminal}`` is the engine's set of terminal states.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from jobs.transport import Queries, State


@cache
def bot_queries() -> Queries:
    """Every named query of the bot."""
    return Queries(
        Path(__file__).parent / "sql", {"terminal": frozenset(s for s in State if s.terminal)}
    )


sql = bot_queries()
"""The bot's queries, and the verbs that run them (``fetch``, ``fetchrow``, ``fetchval``,
``execute``)."""
