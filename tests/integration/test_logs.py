"""Logs: job_id and attempt_id are bound while a job runs; secrets never reach a log line."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import structlog
from pydantic import BaseModel

from jobs.engine.store import JobStore
from jobs.logs import configure
from jobs.runtime.context import Context
from jobs.runtime.registry import Kind, Registry
from jobs.secrets import scrub
from tests.support.runtime import job_reaches, running_worker


class Nothing(BaseModel):
    pass


async def chatty(ctx: Context, params: Nothing) -> dict[str, Any]:
    # A plain module-level logger, not ctx.log: the binding must come from the runtime.
    structlog.get_logger("user_code").info("handler.said_hello", token="s3cr3t-value")
    return {}


async def test_handler_logs_carry_job_and_attempt_ids_and_no_secrets(
    pool: Any, db_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log line written by a handler names its job and attempt; a token value is redacted."""
    registry = Registry()
    registry.add(Kind("chatty", chatty, Nothing))
    store = JobStore(pool, registry)
    configure("info", "json", cache=False)  # cached loggers would outlive capsys
    try:
        job, _ = await store.submit("chatty", {}, requester="a")
        async with running_worker(store, registry, db_dsn, tmp_path):
            await job_reaches(store, job.public_id, {"succeeded"})
    finally:
        structlog.reset_defaults()
    attempt_id = await pool.fetchval("SELECT id FROM attempt WHERE job_id = $1", job.id)
    err = capsys.readouterr().err
    assert "s3cr3t-value" not in err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    [said] = [entry for entry in lines if entry["event"] == "handler.said_hello"]
    assert said["job_id"] == job.public_id
    assert said["attempt_id"] == attempt_id
    assert said["token"] == "**********"


def test_scrub_is_linear_on_a_long_word_and_redacts_a_password_without_user() -> None:
    """scrub runs on the event loop for every output line: 100 kB of one word takes no time;
    ``redis://:pw@host`` loses its password too."""
    started = time.perf_counter()
    assert scrub("x" * 100_000) == "x" * 100_000
    assert time.perf_counter() - started < 0.5
    assert scrub("redis://:pw@cache:6379/0") == "redis://:***@cache:6379/0"
    assert scrub("postgresql://errand:s3cret@db/x") == "postgresql://errand:***@db/x"


def test_configured_secrets_are_redacted_by_value_from_structlog_and_library_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A registered secret (the way settings register the token, API key and DB password) is
    replaced wherever it turns up: inside ``error=str(exc)``, in a library's own log message and
    in a traceback; the line stays one JSON object."""
    import logging

    from jobs.secrets import register

    secret = "Zq9-not-shaped-like-any-token"
    register(secret)
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    configure("info", "json", cache=False)
    try:
        structlog.get_logger("t").warning("x.failed", error=str(OSError(f"refused {secret}")))
        logging.getLogger("discord.http").warning("sent %s to Discord", secret)
        try:
            raise RuntimeError(f"boom {secret}")
        except RuntimeError:
            logging.getLogger("asyncpg").exception("went wrong")
    finally:
        structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)
    err = capsys.readouterr().err
    assert secret not in err
    lines = [json.loads(line) for line in err.splitlines()]
    assert [(e["event"], e.get("logger")) for e in lines] == [
        ("x.failed", None),
        ("sent *** to Discord", "discord.http"),
        ("went wrong", "asyncpg"),
    ]
    assert lines[0]["error"] == "refused ***"
    assert "RuntimeError: boom ***" in lines[2]["exception"]


# A process of its own: this one imported structlog (and rich) long ago.
_CONSOLE_PROCESS = """
import logging, sys
from jobs.logs import configure, get_logger
from jobs.secrets import register
register("s3cr3t-value")
configure("info", "console", cache=False)
log = get_logger("t")
try:
    raise RuntimeError("boom s3cr3t-value")
except RuntimeError:
    log.exception("went wrong", token="s3cr3t-value")
logging.getLogger("asyncpg").warning("library line")
print("rich imported:", "rich" in sys.modules)
import rich.text  # still importable by anyone else (typer's help, a handler)
print("rich after:", rich.text.Text("x").plain)
"""


def test_logging_never_loads_rich_and_renders_plain_tracebacks_on_a_console() -> None:
    """structlog is imported without rich (most of its import cost, paid by every worker at
    start): a process that logs, tracebacks included, on a console or not, never loads rich,
    which stays importable; the traceback is Python's own, redacted, and library lines come
    through the same renderer."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _CONSOLE_PROCESS], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["rich imported: False", "rich after: x"]
    err = done.stderr
    assert "went wrong" in err
    assert "library line" in err
    assert "Traceback (most recent call last):" in err
    assert "RuntimeError: boom ***" in err
    assert "s3cr3t-value" not in err
