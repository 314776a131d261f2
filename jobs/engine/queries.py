"""Named runtime SQL: ``jobs/engine/sql/*.sql`` loaded once into a mapping of name -> query text."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

_HEADER = re.compile(r"^-- name: (?P<name>[a-z_]+)\s*$", re.MULTILINE)


def load_named(directory: Path) -> dict[str, str]:
    """Every ``-- name:`` query in ``directory/*.sql``; raises on a duplicate name."""
    found: dict[str, str] = {}
    for path in sorted(directory.glob("*.sql")):
        text = path.read_text()
        marks = list(_HEADER.finditer(text))
        for mark, nxt in zip(marks, [*marks[1:], None], strict=True):
            body = text[mark.end() : nxt.start() if nxt else len(text)].strip()
            if mark["name"] in found:
                raise ValueError(f"duplicate query name {mark['name']} in {path.name}")
            found[mark["name"]] = body
    return found


@cache
def queries() -> dict[str, str]:
    """The engine's named queries (``jobs/sql``)."""
    return load_named(Path(__file__).parent / "sql")


def q(name: str) -> str:
    """The text of one named query."""
    return queries()[name]


def q_with_sets(name: str, **sets: Iterable[str]) -> str:
    """One named query with each ``{key}`` written in as the array constant of ``sets[key]``
    (``'{a,b}'``, sorted). For sets of states the planner must see as values: a statement whose
    plan turns generic (``job_claim``, ``reaper_due``) can use a partial index on those states
    only when they are a constant, never when they are a parameter."""
    text = q(name)
    for key, values in sets.items():
        placeholder = "{" + key + "}"
        assert placeholder in text, f"{name} has no {placeholder}"
        text = text.replace(placeholder, "'{" + ",".join(sorted(values)) + "}'")
    return text
