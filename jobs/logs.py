"""Logging through structlog: JSON when not a TTY, console when a TTY.

``job_id`` and ``attempt_id`` are bound with contextvars while a job runs, so every line a handler
logs carries them without passing a logger around.

The standard library's loggers (discord.py, aiohttp, asyncpg, asyncio, warnings) go through the
same processors via structlog's ``ProcessorFormatter`` on the root logger, so stderr carries one
format: one JSON object per line when it is not a TTY. Secrets are redacted on every line, from
either source: by key name, and by value (:func:`jobs.secrets.scrub`: the configured secrets and
anything shaped like a credential, in every string, tracebacks included).

structlog is imported on first use (:func:`structlog_module`): a one-shot command that logs
nothing (``errand job status``) configures lazily (``configure(..., lazy=True)``) and never pays
for it; its first log line, from either source, applies the configuration first. It is imported
without rich: structlog loads rich whenever it is installed (typer installs it) only to draw
tracebacks on a console, and that import was most of the 0.1 s (0.08 s on a slow host) that
importing structlog cost every process that logs, a worker's start included. Tracebacks on a
console are Python's own format, in every process (the renderer is told so explicitly).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, MutableMapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from jobs.secrets import scrub, scrub_data

if TYPE_CHECKING:
    from structlog.typing import FilteringBoundLogger

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


class _Deferred(logging.Handler):
    """The root handler of a lazy :func:`configure`: the first standard-library record applies
    the configuration, then goes to the real handler (formatted and redacted like any other)."""

    def emit(self, record: logging.LogRecord) -> None:
        _apply()
        for handler in logging.getLogger().handlers:
            if isinstance(handler, _Handler):
                handler.handle(record)


_pending: tuple[str, str, bool] | None = None
"""A configuration :func:`configure` deferred until the first log line."""


def structlog_module() -> ModuleType:
    """structlog, imported (once) without rich when nothing has imported rich yet.

    rich is an optional dependency of structlog, which falls back to plain tracebacks without it;
    hiding it only for the duration of structlog's own import leaves it importable for anyone
    else (typer's help, a handler's own use).
    """
    # Only while this is the process's one thread: "rich" is hidden from the whole process.
    if "structlog" not in sys.modules and "rich" not in sys.modules and _one_thread():
        sys.modules["rich"] = None  # type: ignore[assignment]  # "import rich" fails meanwhile
        try:
            import structlog
        finally:
            if "rich" in sys.modules and sys.modules["rich"] is None:
                del sys.modules["rich"]
    import structlog

    return structlog


def _one_thread() -> bool:
    import threading

    return threading.active_count() == 1


_bind: Callable[..., Any] | None = None


def bind_contextvars(**values: Any) -> None:
    """``structlog.contextvars.bind_contextvars``: every later line of this task carries these
    (called for every job a worker starts: structlog's function is looked up once)."""
    global _bind
    if _bind is None:
        _bind = structlog_module().contextvars.bind_contextvars
    _bind(**values)


def _level(level: str) -> int:
    return logging.getLevelNamesMapping().get(level.upper(), logging.INFO)


def configure(
    level: str = "info", fmt: str = "auto", *, cache: bool = True, lazy: bool = False
) -> None:
    """Configure structlog and the stdlib root logger once per process.

    ``cache=False`` keeps loggers re-reading the configuration (tests that reconfigure).
    ``lazy``: import structlog and apply it at the first log line, not now (one-shot commands).
    """
    global _pending
    _pending = (level, fmt, cache)
    if not lazy or "structlog" in sys.modules:
        _apply()
        return
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler | _Deferred)]:
        root.removeHandler(old)
    root.addHandler(_Deferred())
    root.setLevel(max(_level(level), logging.WARNING))
    logging.captureWarnings(True)


def _apply() -> None:
    global _pending
    if _pending is None:
        return
    (level, fmt, cache), _pending = _pending, None
    structlog = structlog_module()

    use_console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    renderer: Any = (
        # Plain tracebacks whether or not something imported rich first: one look everywhere.
        structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)
        if use_console
        else structlog.processors.JSONRenderer()
    )
    numeric = _level(level)
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
    for old in [h for h in root.handlers if isinstance(h, _Handler | _Deferred)]:
        root.removeHandler(old)
    root.addHandler(handler)
    # Libraries' info lines (discord.py's connection chatter) stay out unless asked for.
    root.setLevel(max(numeric, logging.WARNING))
    logging.captureWarnings(True)  # warnings.warn(...) lines become log lines too


class _Logger:
    """A structlog logger made on first use (importing structlog, and applying a deferred
    configuration, then)."""

    __slots__ = ("_bound", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._bound: Any = None

    def __getattr__(self, attr: str) -> Any:
        if self._bound is None:
            structlog = structlog_module()
            _apply()
            self._bound = structlog.get_logger(component=self._name)
        return getattr(self._bound, attr)


def get_logger(name: str) -> FilteringBoundLogger:
    """A structlog logger tagged with the component name (made on first use).

    Typed as the filtering bound logger :func:`configure` sets up (structlog's own
    ``get_logger`` returns ``Any``), so a misspelt method is a type error.
    """
    return cast("FilteringBoundLogger", _Logger(name))
