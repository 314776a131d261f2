"""Observers of the engine and the runtime: how the operator surfaces (metrics) learn what
happened without the engine importing them.

The engine calls the functions below where things happen; each calls every registered
:class:`Observer`. :mod:`jobs.ops.metrics` registers one when imported, so a process that serves
``/metrics`` counts what it did; the engine never imports Prometheus.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from jobs.engine.moves import AttemptOutcome, CancelOutcome, Moved, Policy
from jobs.engine.views import Claim


class Observer(Protocol):
    """What an observer is told. Every method has a default that does nothing, so an observer
    subclasses this and overrides what it counts."""

    def transitions_written(self, policy: Policy, moved: Sequence[Moved]) -> None:
        """One :func:`jobs.engine.transition.transition` call wrote (or refused) ``moved``."""

    def claimed(self, claims: Sequence[Claim]) -> None:
        """A worker in this process claimed ``claims`` (``queued -> running``)."""

    def cancel_answered(self, answer: CancelOutcome) -> None:
        """A cancel request was answered."""

    def attempt_started(self, kind: str) -> None:
        """A worker in this process started an attempt of a job of ``kind``."""

    def attempt_ended(self, kind: str, outcome: AttemptOutcome | None, seconds: float) -> None:
        """That attempt ended after ``seconds`` (``outcome`` None: the lease was lost)."""


_observers: list[Observer] = []


def register(observer: Observer) -> None:
    """Tell ``observer`` from now on (registering one twice tells it once)."""
    if observer not in _observers:
        _observers.append(observer)


def unregister(observer: Observer) -> None:
    """Stop telling ``observer``."""
    if observer in _observers:
        _observers.remove(observer)


def transitions_written(policy: Policy, moved: Sequence[Moved]) -> None:
    for observer in _observers:
        observer.transitions_written(policy, moved)


def claimed(claims: Sequence[Claim]) -> None:
    for observer in _observers:
        observer.claimed(claims)


def cancel_answered(answer: CancelOutcome) -> CancelOutcome:
    """Tell the observers about ``answer`` and pass it through."""
    for observer in _observers:
        observer.cancel_answered(answer)
    return answer


def attempt_started(kind: str) -> None:
    for observer in _observers:
        observer.attempt_started(kind)


def attempt_ended(kind: str, outcome: AttemptOutcome | None, seconds: float) -> None:
    for observer in _observers:
        observer.attempt_ended(kind, outcome, seconds)
