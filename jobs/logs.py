"""Logging through structlog: JSON when not a TTY, console when a TTY.

``job_id`` and ``attempt_id`` are bound with contextvars while a job runs, so every line a handler
logs carries them without passing a logger around.

The standard library's loggers (discord.py, aiohttp, asyncpg, asyncio, warnings) go through the
same processors via structlog's ``ProcessorFormatter`` on the root logger, so stderr carries one
format: one JSON object per line when it is not a TTY. Secrets are redacted on every line, from
either source: by key name, and by value (:func:`jobs.secrets.scrub`: the configured secrets and
anything shaped like a credential, in every string, tracebacks included).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog
from structlog.typing import FilteringBoundLogger

from jobs.secrets import scrub, scrub_data

# Keys whose values are never written to a log line, whatever a caller passes.
_SECRET_KEYS = frozenset({"token", "password", "api_key", "secret", "authorization", "dsn", "url"})


def _redact(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key in list(event_dict):
        if key.lower() in _SECRET_KEYS or key.lower().endswith(("_token", "_password", "_key")):
            event_dict[key] = "**********"
        elif isinstance(event_dict[key], str):
            event_dict[key] = scrub(event_dict[key])
        elif isinstance(event_dict[key], dict | list | tuple):
            event_dict[key] = scrub_data(event_dict[key])  # a secret inside a logged value
    return event_dict


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """The root handler :func:`configure` installs (found and replaced on a second call); it
    writes to whatever ``sys.stderr`` is at the time (tests swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def configure(level: str = "info", fmt: str = "auto", *, cache: bool = True) -> None:
    """Configure structlog and the stdlib root logger once per process.

    ``cache=False`` keeps loggers re-reading the configuration (tests that reconfigure).
    """
    use_console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    renderer: Any = (
        structlog.dev.ConsoleRenderer() if use_console else structlog.processors.JSONRenderer()
    )
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    # After format_exc_info: a traceback's text is redacted too.
    final: list[Any] = [structlog.processors.format_exc_info, _redact, renderer]
    structlog.configure(
        processors=[*shared, *final],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=cache,
    )
    handler = _Handler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *final],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    # Libraries' info lines (discord.py's connection chatter) stay out unless asked for.
    root.setLevel(max(numeric, logging.WARNING))
    logging.captureWarnings(True)  # warnings.warn(...) lines become log lines too


def get_logger(name: str) -> FilteringBoundLogger:
    """A structlog logger tagged with the component name.

    Typed as the filtering bound logger :func:`configure` sets up (structlog's own
    ``get_logger`` returns ``Any``), so a misspelt method is a type error.
    """
    logger: FilteringBoundLogger = structlog.get_logger(component=name)
    return logger
