"""The transport door: what a transport such as ``bot/`` uses of the engine, and nothing else.

- The job and its rows: the store (submit, cancel, resolve, status, an operator's search and
  actions), its views, the search's filter, states and actors, ids as people type them
  (:data:`read_id`: text that is no id is an unknown job), and the refusals a caller maps to
  messages.
- What a person types for a job (:func:`parse_params`, :func:`when`), read the same as the CLI
  reads it; which parameter a free-text task fills is the kind's to say
  (``registry.get(kind).task_field``).
- The outbox of notices a transport delivers.
- The process: :class:`Process` assembles a long-running process (engine, worker, health, the
  transport's parts and the secrets it masks, the exit path) from settings; :func:`build_cli`
  makes a console script with the engine's commands beside the transport's, which its ``run()``
  runs.
- The few shared mechanisms: logging, masking secrets in text, backoff and the one list of outage
  errors, the metrics registry, named SQL, and the process's traces (:data:`tracing`, off without
  the otel extra).

Kind authors use :mod:`jobs` instead. Names load on first use (:mod:`jobs.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.lazy import exports

if TYPE_CHECKING:
    from jobs.engine.db import UNAVAILABLE
    from jobs.engine.ids import read_id
    from jobs.engine.notices import Notice, Outbox
    from jobs.engine.queries import Queries
    from jobs.engine.state import Actor, State
    from jobs.engine.store import JobStore
    from jobs.engine.views import JobFilter, JobStatus, JobView
    from jobs.errors import NotAllowed, UnknownJob
    from jobs.logs import get_logger
    from jobs.ops.cli import build_cli
    from jobs.ops.metrics import REGISTRY as METRICS
    from jobs.ops.process import Process
    from jobs.params import parse_params
    from jobs.retry import backoff
    from jobs.runtime.registry import Registry
    from jobs.secrets import scrub
    from jobs.settings import Settings
    from jobs.traces import tracing
    from jobs.when import when

if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = exports(globals())
