"""Errand's job engine: durable, transport-agnostic job records, their state machine and runtime.

This module is the public API, for kind authors (``from jobs import kind, Context, JobFailed``)
and for transports such as ``bot/``, which import nothing else from ``jobs``. Names load on first
use (PEP 562), so a short CLI command imports only the modules it touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # writing a kind
    "kind": "jobs.runtime.registry",
    "Kind": "jobs.runtime.registry",
    "Registry": "jobs.runtime.registry",
    "Context": "jobs.runtime.context",
    "Budget": "jobs.runtime.budget",
    "Meter": "jobs.runtime.budget",
    "Usage": "jobs.runtime.budget",
    "estimate_tokens": "jobs.runtime.budget",
    "JobFailed": "jobs.errors",
    "JobCancelled": "jobs.errors",
    "LeaseLost": "jobs.errors",
    "BudgetExceeded": "jobs.errors",
    "EffectInDoubt": "jobs.errors",
    "default_registry": "jobs.kinds",
    "default_catalog_path": "jobs.kinds.command",
    # errors a caller of the store sees
    "ErrandError": "jobs.errors",
    "UnknownJob": "jobs.errors",
    "UnknownKind": "jobs.errors",
    "InvalidParams": "jobs.errors",
    "QuotaExceeded": "jobs.errors",
    "IdempotencyConflict": "jobs.errors",
    "NotAllowed": "jobs.errors",
    "IllegalTransition": "jobs.errors",
    "StaleTransition": "jobs.errors",
    # job records and states
    "State": "jobs.engine.state",
    "Actor": "jobs.engine.state",
    "TERMINAL": "jobs.engine.state",
    "JobStore": "jobs.engine.store",
    "Submission": "jobs.engine.store",
    "JobStatus": "jobs.engine.views",
    "JobView": "jobs.engine.views",
    "CancelOutcome": "jobs.engine.moves",
    "CancelResult": "jobs.engine.moves",
    "ResolveAs": "jobs.engine.moves",
    "ID_PATTERN": "jobs.engine.ids",
    "normalize_id": "jobs.engine.ids",
    "incarnation": "jobs.engine.ids",
    # the outbox a transport delivers from
    "Outbox": "jobs.engine.notices",
    "Notice": "jobs.engine.notices",
    "OUTBOX_CHANNEL": "jobs.engine.notices",
    "PROGRESS_CHANNEL": "jobs.engine.notices",
    # running it
    "Settings": "jobs.settings",
    "get_logger": "jobs.logs",
    "register_secret": "jobs.secrets",
    "Queries": "jobs.engine.queries",
    "Engine": "jobs.ops.app",
    "open_engine": "jobs.ops.app",
    "stop_on_signals": "jobs.ops.app",
    "Worker": "jobs.runtime.worker",
    "exit_if_abandoned": "jobs.runtime.worker",
    "backoff": "jobs.retry",
    "supervise": "jobs.tasks",
    # faults: what counts as a database outage, and secrets masked by value
    "UNAVAILABLE": "jobs.engine.db",
    "is_unavailable": "jobs.engine.db",
    "scrub": "jobs.secrets",
    "load_settings": "jobs.ops.cli",
    # /healthz, /readyz and /metrics of a long-running process
    "HealthServer": "jobs.ops.health",
    "HealthCheck": "jobs.ops.health",
    "start_health": "jobs.ops.health",
    "worker_check": "jobs.ops.health",
    # what a transport reports for /metrics, where it happens
    "discord_rate_limited": "jobs.ops.metrics",
    "discord_retry": "jobs.ops.metrics",
    "notice_delivered": "jobs.ops.metrics",
    "notice_dead_lettered": "jobs.ops.metrics",
    # the engine's CLI, for an entry point that composes it with its own commands
    "cli_app": "jobs.ops.cli",
    "cli_fail": "jobs.ops.cli",
    "run_cli": "jobs.ops.cli",
}
# where the public name differs from the defining module's
_RENAMED = {
    "ID_PATTERN": "PATTERN",
    "normalize_id": "normalize",
    "register_secret": "register",
    "cli_app": "app",
    "cli_fail": "fail",
    "run_cli": "run",
    "HealthCheck": "Check",
}

__all__ = [
    "ID_PATTERN",
    "OUTBOX_CHANNEL",
    "PROGRESS_CHANNEL",
    "TERMINAL",
    "UNAVAILABLE",
    "Actor",
    "Budget",
    "BudgetExceeded",
    "CancelOutcome",
    "CancelResult",
    "Context",
    "EffectInDoubt",
    "Engine",
    "ErrandError",
    "HealthCheck",
    "HealthServer",
    "IdempotencyConflict",
    "IllegalTransition",
    "InvalidParams",
    "JobCancelled",
    "JobFailed",
    "JobStatus",
    "JobStore",
    "JobView",
    "Kind",
    "LeaseLost",
    "Meter",
    "NotAllowed",
    "Notice",
    "Outbox",
    "Queries",
    "QuotaExceeded",
    "Registry",
    "ResolveAs",
    "Settings",
    "StaleTransition",
    "State",
    "Submission",
    "UnknownJob",
    "UnknownKind",
    "Usage",
    "Worker",
    "backoff",
    "cli_app",
    "cli_fail",
    "default_catalog_path",
    "default_registry",
    "discord_rate_limited",
    "discord_retry",
    "estimate_tokens",
    "exit_if_abandoned",
    "get_logger",
    "incarnation",
    "is_unavailable",
    "kind",
    "load_settings",
    "normalize_id",
    "notice_dead_lettered",
    "notice_delivered",
    "open_engine",
    "register_secret",
    "run_cli",
    "scrub",
    "start_health",
    "stop_on_signals",
    "supervise",
    "worker_check",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jobs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from jobs.engine.db import UNAVAILABLE, is_unavailable
    from jobs.engine.ids import PATTERN as ID_PATTERN
    from jobs.engine.ids import incarnation
    from jobs.engine.ids import normalize as normalize_id
    from jobs.engine.moves import CancelOutcome, CancelResult, ResolveAs
    from jobs.engine.notices import OUTBOX_CHANNEL, PROGRESS_CHANNEL, Notice, Outbox
    from jobs.engine.queries import Queries
    from jobs.engine.state import TERMINAL, Actor, State
    from jobs.engine.store import JobStore, Submission
    from jobs.engine.views import JobStatus, JobView
    from jobs.errors import (
        BudgetExceeded,
        EffectInDoubt,
        ErrandError,
        IdempotencyConflict,
        IllegalTransition,
        InvalidParams,
        JobCancelled,
        JobFailed,
        LeaseLost,
        NotAllowed,
        QuotaExceeded,
        StaleTransition,
        UnknownJob,
        UnknownKind,
    )
    from jobs.kinds import default_registry
    from jobs.kinds.command import default_catalog_path
    from jobs.logs import get_logger
    from jobs.ops.app import Engine, open_engine, stop_on_signals
    from jobs.ops.cli import app as cli_app
    from jobs.ops.cli import fail as cli_fail
    from jobs.ops.cli import load_settings
    from jobs.ops.cli import run as run_cli
    from jobs.ops.health import Check as HealthCheck
    from jobs.ops.health import HealthServer, start_health, worker_check
    from jobs.ops.metrics import (
        discord_rate_limited,
        discord_retry,
        notice_dead_lettered,
        notice_delivered,
    )
    from jobs.retry import backoff
    from jobs.runtime.budget import Budget, Meter, Usage, estimate_tokens
    from jobs.runtime.context import Context
    from jobs.runtime.registry import Kind, Registry, kind
    from jobs.runtime.worker import Worker, exit_if_abandoned
    from jobs.secrets import register as register_secret
    from jobs.secrets import scrub
    from jobs.tasks import supervise
