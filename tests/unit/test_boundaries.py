"""Boundaries: the emulator stands alone; every named query used exists (the import rules of
jobs/ and bot/ are in test_architecture.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from jobs.engine.queries import queries


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


def test_every_named_query_used_in_code_exists() -> None:
    """Every q("name") in the code names a query in jobs/engine/sql/*.sql, and none is unused."""
    used: set[str] = set()
    for path in [*Path("jobs").rglob("*.py"), *Path("bot").rglob("*.py")]:
        used |= set(re.findall(r'\bq\("([a-z_]+)"\)', path.read_text()))
    defined = set(queries())
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


def inner_jobs_imports(folder: Path) -> list[str]:
    """Imports in ``folder`` of a ``jobs`` module other than ``jobs`` itself, or of a name
    outside ``jobs.__all__`` (function-local and TYPE_CHECKING imports included)."""
    import jobs

    found: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                where = f"{path.relative_to(folder)}:{node.lineno}"
                inner = [a.name for a in node.names if a.name.startswith("jobs.")]
                found += [f"{where} import {name}" for name in inner]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                where = f"{path.relative_to(folder)}:{node.lineno}"
                if node.module.startswith("jobs."):
                    found.append(f"{where} from {node.module}")
                elif node.module == "jobs":
                    hidden = [a.name for a in node.names if a.name not in jobs.__all__]
                    found += [f"{where} from jobs import {name}" for name in hidden]
    return found


def test_bot_imports_only_the_public_api_of_jobs() -> None:
    """bot/ imports ``jobs`` itself and only names in ``jobs.__all__``, never ``jobs.engine...``
    or another inner module."""
    assert inner_jobs_imports(Path("bot")) == []


def test_the_boundary_check_sees_every_inner_jobs_import(tmp_path: Path) -> None:
    """The check above can fail: inner imports at module level, under TYPE_CHECKING and inside
    a function are all reported, and a public one is not."""
    (tmp_path / "x.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from jobs import JobStore\n"
        "if TYPE_CHECKING:\n    from jobs.engine.db import connect\n"
        "def f() -> None:\n    import jobs.ops.cli\n    from jobs import not_public\n"
    )
    assert inner_jobs_imports(tmp_path) == [
        "x.py:4 from jobs.engine.db",
        "x.py:6 import jobs.ops.cli",
        "x.py:7 from jobs import not_public",
    ]


def bot_import_graph(folder: Path) -> dict[str, set[str]]:
    """bot module -> the bot modules it imports, anywhere in the file (function-local and
    TYPE_CHECKING imports included)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        name = "bot." + ".".join(path.relative_to(folder).with_suffix("").parts)
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.startswith("bot.")}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == "bot":
                    targets |= {f"bot.{a.name}" for a in node.names}
                elif node.module.startswith("bot."):
                    targets.add(node.module)
        graph[name.removesuffix(".__init__")] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every module that can reach itself, with one path back to it."""
    found: list[list[str]] = []
    for start in sorted(graph):
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    found.append([*path, start])
                    stack.clear()
                    break
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    return found


def test_bot_modules_import_each_other_one_way() -> None:
    """No import cycle among bot modules: commands and delivery reach the bot through what
    they are given, never by importing bot.client back."""
    assert cycles(bot_import_graph(Path("bot"))) == []


def test_the_cycle_check_sees_a_cycle_through_a_type_checking_import(tmp_path: Path) -> None:
    """The check above can fail: a TYPE_CHECKING import back to the importer is a cycle."""
    (tmp_path / "client.py").write_text("from bot.commands import install\n")
    (tmp_path / "commands.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot.client import Bot\n"
    )
    (tmp_path / "render.py").write_text("")
    graph = bot_import_graph(tmp_path)
    assert graph == {
        "bot.client": {"bot.commands"},
        "bot.commands": {"bot.client"},
        "bot.render": set(),
    }
    assert cycles(graph) == [
        ["bot.client", "bot.commands", "bot.client"],
        ["bot.commands", "bot.client", "bot.commands"],
    ]
