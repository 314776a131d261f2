"""Logging through structlog: JSON when not a TTY, console when a TTY.

``job_id`` and ``attempt_id`` are bound with contextvars while a job runs, so every line a handler
logs carries them without passing a logger around.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog
from structlog.typing import FilteringBoundLogger

# Keys whose values are never written to a log line, whatever a caller passes.
_SECRET_KEYS = frozenset({"token", "password", "api_key", "secret", "authorization", "dsn", "url"})


def _redact(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key in list(event_dict):
        if key.lower() in _SECRET_KEYS or key.lower().endswith(("_token", "_password", "_key")):
            event_dict[key] = "**********"
    return event_dict


def configure(level: str = "info", fmt: str = "auto", *, cache: bool = True) -> None:
    """Configure structlog and the stdlib root logger once per process.

    ``cache=False`` keeps loggers re-reading the configuration (tests that reconfigure).
    """
    use_console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    renderer: Any = (
        structlog.dev.ConsoleRenderer() if use_console else structlog.processors.JSONRenderer()
    )
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _redact,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=cache,
    )
    logging.basicConfig(level=max(numeric, logging.WARNING), stream=sys.stderr)


def get_logger(name: str) -> FilteringBoundLogger:
    """A structlog logger tagged with the component name.

    Typed as the filtering bound logger :func:`configure` sets up (structlog's own
    ``get_logger`` returns ``Any``), so a misspelt method is a type error.
    """
    logger: FilteringBoundLogger = structlog.get_logger(component=name)
    return logger
