"""The bot's named SQL (``bot/sql/*.sql``), loaded once; the same format as ``jobs/sql``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from jobs import load_named


@cache
def bot_queries() -> dict[str, str]:
    """Every named query of the bot."""
    return load_named(Path(__file__).parent / "sql")


def sql(name: str) -> str:
    """The text of one of the bot's named queries."""
    return bot_queries()[name]
