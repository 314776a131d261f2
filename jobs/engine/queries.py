"""Named SQL: ``-- name:`` queries with ``:name`` parameters, loaded once per folder.

A query file holds queries that each start with ``-- name: NAME`` and a line or two saying what
they do. Parameters are written ``:name`` and reach asyncpg as ``$1, $2, ...``; a call passes
them by name (:meth:`Queries.fetch` and the other verbs), and a missing or unknown name is an
error before anything is sent. ``{set}`` names a set of states from
:data:`jobs.engine.policy.SQL_SETS`, written into the text as an array constant when the file is
loaded: the planner then sees the states as values, which a partial index on them needs (a
parameter would not do, docs/architecture.md). A part two queries share is written once, after
``-- fragment: NAME``, and ``{NAME}`` alone on a line of a query stands for its text (written in
before the query is read, so its parameters and sets are the query's own). Nothing rewrites a
query after it is loaded.

Why not aiosql: its queries are methods made at run time, so mypy sees none of them, and it
wraps every call in its own connection handling; what Errand needs of it (names, named
parameters) is the small scanner below, and the calls stay asyncpg's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import asyncpg

from jobs.engine.policy import SQL_SETS

_HEADER = re.compile(r"^-- (?P<what>name|fragment): (?P<name>[a-z_]+)\s*$", re.MULTILINE)
# What the scanner steps over whole (strings, quoted names, comments, casts) or replaces
# (parameters, sets).
_TOKEN = re.compile(
    r"'(?:[^']|'')*'"
    r'|"(?:[^"]|"")*"'
    r"|--[^\n]*"
    r"|::"
    r"|:(?P<param>[a-z_][a-z0-9_]*)"
    r"|\{(?P<set>[a-z_]+)\}"
)

# A fragment is written in where its name stands alone on a line (never inside a comment).
_FRAGMENT = re.compile(r"^[ \t]*\{(?P<name>[a-z_]+)\}[ \t]*$", re.MULTILINE)

Executor = asyncpg.Connection | asyncpg.pool.PoolConnectionProxy | asyncpg.Pool
"""What runs a query: a connection, pooled or not, or a pool (which acquires one)."""


@dataclass(frozen=True)
class Query:
    """One named query: its text for asyncpg and its parameter names, in ``$n`` order."""

    name: str
    sql: str
    params: tuple[str, ...]

    def args(self, values: Mapping[str, Any]) -> list[Any]:
        """The positional arguments for ``values`` (by name).

        Raises:
            TypeError: a parameter is missing or unknown (a programming error).
        """
        try:
            args = [values[p] for p in self.params]
        except KeyError:
            args = []
        if len(args) != len(values) or len(args) != len(self.params):
            missing = sorted(set(self.params) - set(values))
            unknown = sorted(set(values) - set(self.params))
            raise TypeError(f"{self.name}: missing {missing}, unknown {unknown}")
        return args


def parse(name: str, text: str, sets: Mapping[str, Any]) -> Query:
    """One query's text with ``:name`` parameters as ``$n`` and ``{set}`` constants written in."""
    params: list[str] = []

    def replace(match: re.Match[str]) -> str:
        if match["param"]:
            if match["param"] not in params:
                params.append(match["param"])
            return f"${params.index(match['param']) + 1}"
        if match["set"]:
            if match["set"] not in sets:
                raise ValueError(f"{name}: no state set {{{match['set']}}}")
            return "'{" + ",".join(sorted(str(s) for s in sets[match["set"]])) + "}'"
        return match[0]

    return Query(name, _TOKEN.sub(replace, text), tuple(params))


def query_texts(directory: Path) -> dict[str, str]:
    """The text of each named query of a folder's ``.sql`` files, its fragments written in (its
    ``:name`` parameters and ``{set}`` names not yet replaced: :func:`parse` does that).

    Raises:
        ValueError: a name defined twice, or a fragment a query names that does not exist.
    """
    bodies: dict[str, dict[str, str]] = {"name": {}, "fragment": {}}
    for path in sorted(directory.glob("*.sql")):
        text = path.read_text()
        marks = list(_HEADER.finditer(text))
        for mark, nxt in zip(marks, [*marks[1:], None], strict=True):
            body = text[mark.end() : nxt.start() if nxt else len(text)].strip()
            if mark["name"] in bodies["name"] or mark["name"] in bodies["fragment"]:
                raise ValueError(f"duplicate query name {mark['name']} in {path.name}")
            bodies[mark["what"]][mark["name"]] = body
    fragments = bodies["fragment"]

    def written_in(match: re.Match[str]) -> str:
        if match["name"] not in fragments:
            raise ValueError(f"no fragment {{{match['name']}}}")
        return fragments[match["name"]]

    return {name: _FRAGMENT.sub(written_in, body) for name, body in bodies["name"].items()}


class Queries(Mapping[str, Query]):
    """The named queries of one folder of ``.sql`` files, and the verbs that run them."""

    def __init__(self, directory: Path, sets: Mapping[str, Any] | None = None) -> None:
        self._queries: dict[str, Query] = {
            name: parse(name, text, sets or {}) for name, text in query_texts(directory).items()
        }

    def __getitem__(self, name: str) -> Query:
        return self._queries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._queries)

    def __len__(self) -> int:
        return len(self._queries)

    def _call(self, name: str, params: Mapping[str, Any]) -> tuple[str, list[Any]]:
        query = self._queries[name]
        return query.sql, query.args(params)

    async def fetch(self, conn: Executor, query: str, /, **params: Any) -> list[asyncpg.Record]:
        """The rows of the query named ``query``."""
        sql, args = self._call(query, params)
        return list(await conn.fetch(sql, *args))

    async def fetchrow(self, conn: Executor, query: str, /, **params: Any) -> asyncpg.Record | None:
        """The first row of the query named ``query``, or None."""
        sql, args = self._call(query, params)
        return await conn.fetchrow(sql, *args)

    async def fetchval(self, conn: Executor, query: str, /, **params: Any) -> Any:
        """The first column of the first row of the query named ``query``, or None."""
        sql, args = self._call(query, params)
        return await conn.fetchval(sql, *args)

    async def execute(self, conn: Executor, query: str, /, **params: Any) -> str:
        """Run the query named ``query``; its status text."""
        sql, args = self._call(query, params)
        return await conn.execute(sql, *args)


@cache
def engine_queries() -> Queries:
    """The engine's named queries (``jobs/engine/sql``), with the state sets of the table."""
    return Queries(Path(__file__).parent / "sql", SQL_SETS)
