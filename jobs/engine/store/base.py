"""What every group of the store's verbs stands on: the pool, the kinds it accepts, the quotas.

:class:`jobs.engine.store.JobStore` is these groups (one module each) over one :class:`Base`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import asyncpg

from jobs.engine.lane import Lane
from jobs.engine.queries import Queries, engine_queries


@dataclass(frozen=True)
class Quotas:
    """Limits on jobs not yet terminal; ``None`` means unlimited."""

    per_requester: int | None = None
    per_group: int | None = None


class KindSpec(Protocol):
    """What the store needs of a kind (:class:`jobs.runtime.registry.Kind` is one)."""

    @property
    def max_attempts(self) -> int: ...
    @property
    def deadline_seconds(self) -> float | None: ...
    @property
    def requester_may_resolve(self) -> bool: ...
    @property
    def retry_safe(self) -> bool: ...
    @property
    def count_crashes(self) -> bool: ...
    def validate(self, raw: dict[str, Any]) -> dict[str, Any]: ...


class Kinds(Protocol):
    """The kinds a store accepts, by name (:class:`jobs.runtime.registry.Registry` is one).

    A protocol, so the engine does not import the handler runtime that sits above it.
    """

    def get(self, name: str) -> KindSpec: ...
    def find(self, name: str) -> KindSpec | None: ...


class Base:
    """The store's state: one pool, the registry of kinds, the quotas, the named queries."""

    def __init__(
        self, pool: asyncpg.Pool, registry: Kinds, *, quotas: Quotas | None = None
    ) -> None:
        self.pool = pool
        self.registry = registry
        self.quotas = quotas or Quotas()
        self.sql: Queries = engine_queries()
        self.lane = Lane(pool)  # for one-statement submits made one after another
