"""The bot's named SQL (``bot/sql/*.sql``), loaded once; the same format as the engine's."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from jobs.transport import Queries


@cache
def bot_queries() -> Queries:
    """Every named query of the bot."""
    return Queries(Path(__file__).parent / "sql")


def sql(name: str) -> str:
    """The text of one of the bot's named queries."""
    return bot_queries()[name].sql
