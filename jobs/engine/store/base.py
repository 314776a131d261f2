"""What every group of the store's verbs stands on: the pool, the kinds it accepts, the quotas.

:class:`jobs.engine.store.JobStore` is these groups (one module each) over one :class:`Base`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import asyncpg

from jobs.engine.lane import Lane
from jobs.engine.line import Fairness, LoneClaims
from jobs.engine.queries import Queries, engine_queries


@dataclass(frozen=True)
class Quotas:
    """Limits on jobs not yet terminal; ``None`` means unlimited."""

    per_requester: int | None = None
    per_group: int | None = None


@dataclass(frozen=True, kw_only=True)
class KindSpec(ABC):
    """How the engine treats a kind's jobs: the one declaration of these rules.

    :class:`jobs.runtime.registry.Kind` extends it with the handler, and the ``kind`` decorator
    takes Kind's own signature, so each rule is written here alone. Keyword-only, so that a
    kind's name, handler and parameter model stay its first three positional fields.
    """

    retry_safe: bool = False
    """Safe to run again from the start after a failure or a lost worker."""
    max_attempts: int = 1
    """Failed attempts allowed, including the first; only retry-safe kinds get more than one.
    Only handler failures use them up (and crashes, with ``count_crashes``): a release on
    shutdown, a lease lost in a database outage or a worker crash is not the job's fault."""
    count_crashes: bool = False
    """A worker crash while this kind runs uses up an attempt: set it for work that can itself
    kill its worker (memory, native code), so a poison job cannot crash workers forever."""
    deadline_seconds: float | None = None
    """Maximum wall time from submit to the end, in seconds (None: no deadline)."""
    requester_may_resolve: bool = False
    """Whether the requester (not only an operator) may resolve an ``unknown`` outcome."""
    priority: int = 0
    """The priority of its jobs unless a submit says otherwise (-10 to 10; higher first)."""
    concurrency: int | None = None
    """At most this many of its jobs run at once across the fleet (None: no cap); an operator
    overrides it with ``errand kind limit``."""
    starts_per_minute: int | None = None
    """At most this many of its jobs start in any minute across the fleet (None: no cap)."""

    @abstractmethod
    def validate(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Validated, normalized parameters as JSON-able data (raises InvalidParams)."""


class Kinds(Protocol):
    """The kinds a store accepts, by name (:class:`jobs.runtime.registry.Registry` is one).

    A protocol, so the engine does not import the handler runtime that sits above it.
    """

    def get(self, name: str) -> KindSpec: ...
    def find(self, name: str) -> KindSpec | None: ...


class Base:
    """The store's state: one pool, the registry of kinds, the quotas, the named queries."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        registry: Kinds,
        *,
        quotas: Quotas | None = None,
        claims: asyncpg.Pool | None = None,
        fairness: Fairness | None = None,
    ) -> None:
        self.pool = pool
        self.registry = registry
        self.quotas = quotas or Quotas()
        self.fairness = fairness or Fairness()
        """The fleet's rules between requesters: what claims follow and places in line show,
        unless a caller names its own."""
        self.sql: Queries = engine_queries()
        self.lane = Lane(pool)  # for one-statement submits made one after another
        # The claim's own connections plan it once (jobs/engine/db.py, claim_pool); without
        # them it shares the lane and is planned on each call.
        self.claim_lane = Lane(claims) if claims is not None else self.lane
        self.lone_claims = LoneClaims()  # whether claims try the cheap statement first
