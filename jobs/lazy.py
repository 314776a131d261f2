"""Lazy loading for the public doors (PEP 562), each name written once.

A door (``jobs``, ``jobs.transport``) lists its names as imports under ``if TYPE_CHECKING:``,
which is what type checkers and readers see. :func:`exports` reads those imports from the door's
own source and returns the module's ``__getattr__``, ``__dir__`` and ``__all__``, so a name loads
its module on first use and a short CLI command imports only what it touches.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _type_checking_imports(path: Path) -> dict[str, tuple[str, str]]:
    """``public name -> (module, attribute)`` of the ``from m import a as b`` statements under
    the module's top-level ``if TYPE_CHECKING:``."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                    for alias in stmt.names:
                        found[alias.asname or alias.name] = (stmt.module, alias.name)
    return found


def exports(
    namespace: dict[str, Any],
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for the door whose ``globals()`` is ``namespace``."""
    table = _type_checking_imports(Path(namespace["__file__"]))
    door = namespace["__name__"]
    names = sorted(table)

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {door!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[0]), where[1])
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return names

    return __getattr__, __dir__, names


def origins(door: str) -> dict[str, tuple[str, str]]:
    """Where each public name of ``door`` comes from (for tests and docs)."""
    module = importlib.import_module(door)
    assert module.__file__ is not None
    return _type_checking_imports(Path(module.__file__))
