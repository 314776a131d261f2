"""Hostile and mistaken CLI input: refused at the edge with exit code 2 and one line, nothing
written; a database that cannot be reached is one line naming it, never a traceback."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from tests.support.cli import run_cli

DEEP = "[" * 50_000 + "]" * 50_000
HUGE = "k" * 100_000

# (what, argv); every case must exit 2 with one line on stderr and write nothing.
BAD_INPUT: list[tuple[str, list[str]]] = [
    ("NUL through a JSON escape", ["job", "submit", "agent", "--param", 'prompt="a\\u0000b"']),
    ("NUL in a JSON key", ["job", "submit", "demo", "--param", 'budget={"a\\u0000": 1}']),
    ("100 KB idempotency key", ["job", "submit", "noop", "--idempotency-key", HUGE]),
    ("100 KB requester", ["job", "submit", "noop", "--requester", HUGE]),
    ("50,000-deep JSON", ["job", "submit", "demo", "--param", f"steps={DEEP}"]),
    ("NaN param", ["job", "submit", "demo", "--param", "step_seconds=NaN"]),
    (
        "NaN command parameter",
        ["job", "submit", "command", "--param", "name=measure", "--param", 'args={"ratio": NaN}'],
    ),
    ("huge job id", ["job", "status", HUGE]),
    ("huge cancel reason", ["job", "cancel", "abcdefgh", "--reason", HUGE]),
    ("negative --limit", ["job", "list", "--limit", "-1"]),
    ("huge --limit", ["job", "list", "--limit", "99999999999999999999"]),
    ("--newer-than NaN", ["job", "list", "--newer-than", "NaN"]),
    ("--newer-than 1e300", ["job", "list", "--newer-than", "1e300"]),
    ("--newer-than -5", ["job", "list", "--newer-than", "-5"]),
    ("prune --older-than 999...d", ["prune", "--older-than", "9" * 30 + "d"]),
    ("outbox retry with a 30-digit id", ["outbox", "retry", "1" * 30]),
    ("outbox list --limit 0", ["outbox", "list", "--limit", "0"]),
]

CATALOG = """
[commands.measure]
argv = ["echo", "{ratio}"]
retry_safe = true
[commands.measure.params.ratio]
type = "number"
min = 0
max = 1
"""


@pytest.mark.parametrize(("what", "argv"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
async def test_bad_input_is_refused_with_exit_2_and_one_line(
    what: str, argv: list[str], cli_env: dict[str, str], pool: asyncpg.Pool, tmp_path: Path
) -> None:
    catalog = tmp_path / "commands.toml"
    catalog.write_text(CATALOG)
    ran = await run_cli(cli_env | {"ERRAND_COMMAND_CATALOG": str(catalog)}, *argv)
    lines = ran.err.strip().splitlines()
    assert ran.code == 2, f"{what}: exit {ran.code}: {ran.err[-2000:]}"
    assert len(lines) == 1, f"{what}: {len(lines)} lines: {ran.err[-2000:]}"
    assert lines[0].startswith("error: ")
    assert len(lines[0]) < 400
    assert await pool.fetchval("SELECT count(*) FROM job") == 0


async def test_an_unreachable_database_is_one_line_naming_it(
    cli_env: dict[str, str], unused_tcp_port: int
) -> None:
    """``errand job list`` against a port where nothing listens: one line that names the
    database (never its password), exit code 1, no traceback."""
    dsn = f"postgresql://errand:hunter2-secret@127.0.0.1:{unused_tcp_port}/errand"
    ran = await run_cli(cli_env | {"DATABASE_URL": dsn}, "job", "list")
    lines = ran.err.strip().splitlines()
    assert ran.code == 1, ran.err[-2000:]
    assert len(lines) == 1, ran.err[-2000:]
    assert lines[0].startswith("error: cannot reach the database")
    assert f"127.0.0.1:{unused_tcp_port}/errand" in lines[0]
    assert "hunter2-secret" not in ran.err + ran.out
