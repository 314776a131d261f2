"""The bot's named SQL (``bot/sql/*.sql``), loaded once; the same format as ``jobs/sql``."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

_HEADER = re.compile(r"^-- name: (?P<name>[a-z_]+)\s*$", re.MULTILINE)


@cache
def bot_queries() -> dict[str, str]:
    """Every named query of the bot; raises on a duplicate name."""
    found: dict[str, str] = {}
    for path in sorted((Path(__file__).parent / "sql").glob("*.sql")):
        text = path.read_text()
        marks = list(_HEADER.finditer(text))
        for mark, nxt in zip(marks, [*marks[1:], None], strict=True):
            if mark["name"] in found:
                raise ValueError(f"duplicate query name {mark['name']} in {path.name}")
            found[mark["name"]] = text[mark.end() : nxt.start() if nxt else len(text)].strip()
    return found


def sql(name: str) -> str:
    """The text of one of the bot's named queries."""
    return bot_queries()[name]
