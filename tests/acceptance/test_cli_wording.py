"""The newcomer's CLI, through the real ``errand``: refusals at the edge name what is wrong in one
line (exit 2, nothing written), and what a command prints reads as words, each fact once.

Issue #32, part 2: items 13 (sandbox address), 14 (an unknown kind), 15 (parameters), 16 (the
wording of cancel, status and show) and 20 (lone surrogates).
"""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from tests.acceptance.conftest import ErrandJson, SpawnWorker
from tests.support.cli import Ran, run_cli
from tests.support.polling import poll

# (what, argv, the one line on stderr); each exits 2 and writes nothing.
REFUSED: list[tuple[str, list[str], str]] = [
    (
        "a port beyond 65535",
        ["sandbox", "--port", "99999"],
        "error: Invalid value for '--port': Input should be less than or equal to 65535 "
        "(see --help)",
    ),
    (
        "a host that is not this machine's",
        ["sandbox", "--host", "192.0.2.1"],
        "error: cannot serve on 192.0.2.1 (cannot assign requested address); --host must be "
        "an address of this machine, e.g. 127.0.0.1",
    ),
    (
        "a host that does not resolve",
        ["sandbox", "--host", "no-such-host.invalid"],
        "error: cannot serve on 'no-such-host.invalid' (not a host name or address); --host "
        "must be an address of this machine, e.g. 127.0.0.1",
    ),
    (
        "an unknown kind in job list",
        ["job", "list", "--kind", "bogus"],
        "error: unknown kind 'bogus'; known kinds: agent, command, demo, noop, sleep",
    ),
    (
        "nan as text for a number",
        ["job", "submit", "sleep", "-p", "seconds=nan"],
        "error: invalid params for sleep: seconds: must be a finite number, not 'nan'",
    ),
    (
        "1e999 as a number",
        ["job", "submit", "demo", "-p", "step_seconds=1e999"],
        "error: params: numbers must be finite, not inf",
    ),
    (
        "a parameter given twice",
        ["job", "submit", "demo", "-p", "steps=3", "-p", "steps=4"],
        "error: bad --param steps: given twice; give it once",
    ),
    (
        "a parameter the kind does not have",
        ["job", "submit", "demo", "-p", "stepz=3"],
        "error: invalid params for demo: stepz: no such parameter (this kind's: steps, "
        "step_seconds, fail_at_step, flaky, ask, ask_at_step, choices, timeout, default, "
        "effect_seconds)",
    ),
    (
        "a validator's message, without pydantic's prefix",
        ["job", "submit", "command", "-p", "name=nothere"],
        "error: invalid params for command: params: no command 'nothere' in the catalog; "
        "known: count, date, disk_usage, hello, restart_service",
    ),
    (
        "a lone surrogate in a JSON parameter",
        ["job", "submit", "agent", "--param", 'prompt="a\\ud800b"'],
        "error: params: contains \\ud800, a lone surrogate, which is not text",
    ),
    (
        "a lone surrogate in a plain argument",
        ["job", "submit", "noop", "--requester", "a\udcffb"],
        "error: --requester: contains \\udcff, a lone surrogate, which is not text",
    ),
]


def one_line(ran: Ran) -> str:
    lines = ran.err.strip().splitlines()
    assert ran.code == 2, f"exit {ran.code}: {ran.err[-2000:]}"
    assert len(lines) == 1, ran.err[-2000:]
    return lines[0]


@pytest.mark.parametrize(("what", "argv", "line"), REFUSED, ids=[c[0] for c in REFUSED])
async def test_a_refusal_is_one_line_naming_what_is_wrong(
    what: str, argv: list[str], line: str, cli_env: dict[str, str], pool: asyncpg.Pool
) -> None:
    ran = await run_cli(cli_env, *argv)
    assert one_line(ran) == line, what
    assert await pool.fetchval("SELECT count(*) FROM job") == 0


async def test_a_port_in_use_says_so_before_anything_starts(
    cli_env: dict[str, str], tmp_path: Path, unused_tcp_port: int
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", unused_tcp_port))
        taken.listen()
        ran = await run_cli(
            cli_env,
            "sandbox",
            "--port",
            str(unused_tcp_port),
            "--data-dir",
            str(tmp_path / "sandbox"),
        )
    assert one_line(ran) == (
        f"error: port {unused_tcp_port} on 127.0.0.1 is in use (another sandbox?); try --port"
    )
    assert not (tmp_path / "sandbox").exists()  # nothing started, nothing made


async def test_a_file_names_its_lines_the_way_an_editor_counts_them(
    cli_env: dict[str, str], tmp_path: Path, pool: asyncpg.Pool
) -> None:
    """Every refusal of ``--from`` names the line of the file (from 1, blank lines counted),
    whether the CLI found it (not JSON) or the store did (bad params, a lone surrogate)."""
    cases = [
        ('\n{"kind": "demo"}\n\n{"kind": "demo", "params": {"steps": "x"}}\n', "line 4: "),
        ('{"kind": "demo"}\nnot json\n', "line 2: not JSON"),
        ('{"kind": "demo"}\n\n{"kind": "demo", "params": {"note": "\\ud800"}}\n', "line 3: "),
        ('{"kind": "demo", "requester": "a\\udc80"}\n', "line 1: requester: contains \\udc80"),
    ]
    for text, start in cases:
        path = tmp_path / "jobs.jsonl"
        path.write_text(text)
        line = one_line(await run_cli(cli_env, "job", "submit", "--from", str(path)))
        assert line.startswith(f"error: {start}"), (text, line)
        assert "row " not in line
    assert await pool.fetchval("SELECT count(*) FROM job") == 0


async def test_cancel_status_and_show_read_as_words_each_fact_once(
    errand_json: ErrandJson,
    spawn_worker: SpawnWorker,
    pool: asyncpg.Pool,
    cli_env: dict[str, str],
) -> None:
    job = await errand_json(
        "job", "submit", "demo", "-p", "steps=40", "-p", "step_seconds=0.2", "--json"
    )
    job_id = job["id"]
    await spawn_worker()
    await poll(
        lambda: pool.fetchval(
            "SELECT count(*) FROM step s JOIN job j ON j.id = s.job_id "
            "WHERE j.public_id = $1 AND s.outcome = 'ok'",
            job_id,
        ),
        20,
        until=lambda n: n >= 3,
        what="three steps done",
    )
    asked = await run_cli(cli_env, "job", "cancel", job_id, "--reason", "cli test")
    assert asked.code == 0, asked.err
    assert asked.out.strip() == (
        f"{job_id} asked to stop (cancelling); `errand job status {job_id}` shows when it has"
    )
    await poll(
        lambda: pool.fetchval("SELECT state::text FROM job WHERE public_id = $1", job_id),
        10,
        until=lambda s: s == "cancelled",
    )
    again = await run_cli(cli_env, "job", "cancel", job_id)
    assert (again.code, again.out.strip()) == (0, f"{job_id} already cancelled: nothing to cancel")

    status = await run_cli(cli_env, "job", "status", job_id)
    lines = status.out.splitlines()
    assert "reason: cli test" in lines
    assert status.out.count("cli test") == 3  # the reason, and the two events that carry it
    assert "cancelled by operator" not in status.out
    # The steps by name: a row number beside it ("54. step 53") read as another step.
    steps = lines[lines.index("steps:") + 1 : lines.index("events:")]
    assert steps[:3] == ["  step 1: ok", "  step 2: ok", "  step 3: ok"], steps
    assert not any(line.strip()[0].isdigit() for line in steps), steps

    show = await run_cli(cli_env, "job", "show", job_id)
    assert "step 1 step 1" not in show.out
    assert any(line.endswith("step     step 1 started") for line in show.out.splitlines())
    assert any(line.endswith("step     step 1: ok") for line in show.out.splitlines())
