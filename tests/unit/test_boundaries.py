"""Boundaries: the emulator stands alone; every named query used exists (the import rules of
jobs/ and bot/ are in test_architecture.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from jobs.engine.queries import engine_queries


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_emulator_never_imports_errand() -> None:
    """discord_emulator/ stands alone: no jobs or bot imports."""
    offenders = {
        str(p): sorted(_imports(p) & {"jobs", "bot"})
        for p in Path("discord_emulator").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


# A named query run through Queries' verbs: ``sql.fetch(conn, "name", ...)``, or one of two
# chosen in the call: ``sql.fetch(conn, "a" if newest else "b", ...)``.
_USED = re.compile(
    r'\.(?:fetch|fetchrow|fetchval|execute)\(\s*[\w.()]+,\s*"([a-z_]+)"'
    r'(?:\s+if\s+[^"\n]+\s+else\s+"([a-z_]+)")?'
)


def test_every_named_query_used_in_code_exists() -> None:
    """Every named query the engine's code runs is in jobs/engine/sql/*.sql, and none of those
    is unused."""
    used: set[str] = set()
    for path in Path("jobs").rglob("*.py"):
        used |= {name for pair in _USED.findall(path.read_text()) for name in pair if name}
    defined = set(engine_queries())
    assert used - defined == set()
    assert defined - used == set()


def test_every_bot_query_used_exists_and_none_is_unused() -> None:
    """The same for the bot's sql("name") and bot/sql/*.sql."""
    from bot.queries import bot_queries

    used: set[str] = set()
    mentioned: set[str] = set()  # names handed to helpers such as Delivery._write("name", ...)
    for path in Path("bot").rglob("*.py"):
        text = path.read_text()
        used |= set(re.findall(r'\bsql\("([a-z_]+)"\)', text))
        mentioned |= set(re.findall(r'"([a-z_]+)"', text))
    defined = set(bot_queries())
    assert used - defined == set()
    assert defined - mentioned == set()
