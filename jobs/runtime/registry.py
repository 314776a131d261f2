"""The registry of job kinds: a handler, its parameter model and its metadata, by name.

Kinds come from the :func:`kind` decorator (Errand's built-ins and a user's code) and from the
``errand.kinds`` entry-point group, so a user's package can add kinds without touching Errand.
An entry point names a module (imported for its decorators) or a :class:`Kind` object.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Concatenate, ParamSpec

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from jobs.engine.store import KindSpec
from jobs.errors import InvalidParams, UnknownKind
from jobs.params import TASK_FIELDS
from jobs.runtime.budget import Budget
from jobs.runtime.context import Context

Handler = Callable[[Context, Any], Awaitable[Any]]
P = ParamSpec("P")
ENTRY_POINT_GROUP = "errand.kinds"


@dataclass(frozen=True)
class Kind(KindSpec):
    """A registered kind of job: its handler and parameter model, and the engine's rules for it
    (:class:`~jobs.engine.store.KindSpec`: ``retry_safe``, ``max_attempts``, ...,
    keyword-only)."""

    name: str
    handler: Handler
    params: type[BaseModel]
    description: str = ""
    # Default bounds of this kind; they tighten the global ones (settings), never loosen them.
    budget: Budget | None = None

    @property
    def task_field(self) -> str | None:
        """The parameter a free-text task fills (a transport's ``/summon task:...``): the first
        of :data:`~jobs.params.TASK_FIELDS` this kind's parameters have, or None."""
        return next((f for f in TASK_FIELDS if f in self.params.model_fields), None)

    def validate(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Validated, normalized parameters as JSON-able data.

        Raises:
            InvalidParams: with one short line naming each bad field.
        """
        try:
            model = self.params.model_validate(raw)
        except ValidationError as exc:
            fields = list(self.params.model_fields)
            problems = "; ".join(problem(err, fields) for err in exc.errors())
            raise InvalidParams(f"invalid params for {self.name}: {problems}") from None
        # Text such as "nan" or "1e999" becomes a float that is not finite where no bound
        # catches it; stored, it would read back as null.
        # (The JSON dump keeps them as floats: one dump serves the check and the record.)
        dumped = model.model_dump(mode="json")
        for name, value in dumped.items():
            if _not_finite(value):
                raise InvalidParams(
                    f"invalid params for {self.name}: {name}: must be a finite number"
                )
        return dumped

    def parse(self, stored: dict[str, Any]) -> BaseModel:
        """The parameter model for stored (already validated) params."""
        return self.params.model_validate(stored)


def problem(err: ErrorDetails, fields: list[str]) -> str:
    """One field's validation error as a person reads it: ``steps: no such parameter (this
    kind's: ...)``, ``seconds: must be a finite number, not 'nan'``; never pydantic's own
    prefixes ("Value error, ")."""
    where = ".".join(str(p) for p in err["loc"]) or "params"
    if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
        return f"{where}: no such parameter (this kind's: {', '.join(fields) or 'none'})"
    given = err.get("input")
    if isinstance(given, str) and _reads_as_not_finite(given):
        return f"{where}: must be a finite number, not {given!r}"
    return f"{where}: {err['msg'].removeprefix('Value error, ')}"


def _reads_as_not_finite(text: str) -> bool:
    """Whether ``text`` reads as a number that is not finite ("nan", "-inf", "1e999")."""
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


def _not_finite(value: Any) -> bool:
    """Whether ``value`` is, or holds (a nested model's fields), a float that is not finite."""
    if isinstance(value, dict):
        return any(_not_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_not_finite(v) for v in value)
    return isinstance(value, float) and not math.isfinite(value)


class Registry:
    """Kinds by name."""

    def __init__(self) -> None:
        self._kinds: dict[str, Kind] = {}

    def add(self, kind: Kind) -> Kind:
        if kind.name in self._kinds and self._kinds[kind.name] is not kind:
            raise ValueError(f"kind {kind.name!r} is already registered")
        if kind.max_attempts > 1 and not kind.retry_safe:
            raise ValueError(f"kind {kind.name!r}: only retry-safe kinds may have max_attempts > 1")
        self._kinds[kind.name] = kind
        return kind

    def get(self, name: str) -> Kind:
        try:
            return self._kinds[name]
        except KeyError:
            raise UnknownKind(name, list(self._kinds)) from None

    def find(self, name: str) -> Kind | None:
        """The kind, or None when this process does not know it."""
        return self._kinds.get(name)

    def names(self) -> list[str]:
        return sorted(self._kinds)

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def load_entry_points(self) -> list[str]:
        """Import every ``errand.kinds`` entry point; returns the names it provided."""
        loaded: list[str] = []
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            before = set(self._kinds)
            obj = ep.load()
            if isinstance(obj, Kind):
                self.add(obj)
            loaded.extend(sorted(set(self._kinds) - before) or [ep.name])
        return loaded


registry = Registry()
"""The process-wide registry the decorator writes to."""


def _declaring(
    make: Callable[Concatenate[str, Handler, P], Kind],
) -> Callable[Concatenate[str, P], Callable[[Handler], Handler]]:
    """A decorator that takes ``make``'s signature less the handler: ``kind``'s options are
    :class:`Kind`'s own fields, declared there once."""

    def kind(name: str, /, *args: P.args, **kwargs: P.kwargs) -> Callable[[Handler], Handler]:
        """Register an async handler as a kind of job (the arguments are :class:`Kind`'s)."""

        def register(handler: Handler) -> Handler:
            made = make(name, handler, *args, **kwargs)
            if not made.description:
                summary = (handler.__doc__ or "").strip().split("\n")[0]
                made = replace(made, description=summary)
            registry.add(made)
            return handler

        return register

    return kind


kind = _declaring(Kind)
"""``@kind(name, params=Model, retry_safe=..., ...)``: register an async handler as a kind of job
in the process-wide registry; the description defaults to the handler's first docstring line."""
