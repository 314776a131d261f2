"""The CLI as a person meets it: ``job submit --help`` lists every registered kind with its
parameters and examples, flags show what to type (never a Python type), and ``job status``
reads at a glance: the task, progress as "3 of 5", and the result or the reason."""

from __future__ import annotations

import asyncio
import json
import re
import sys

import asyncpg

from tests.acceptance.conftest import ErrandJson, SpawnWorker
from tests.support.cli import ROOT, run_cli
from tests.support.polling import poll

PYTHON_TYPES = re.compile(r"<(bool|str|int|float|list\[[^\]]*\]|Path)>")


async def registered_kinds(env: dict[str, str]) -> dict[str, list[str]]:
    """Every kind and its parameters, as a process with ``env`` registers them."""
    code = (
        "import json, os; from jobs.kinds import default_registry; "
        "r = default_registry(os.environ.get('ERRAND_EXTRA_KINDS', '')); "
        "print(json.dumps({n: list(r.get(n).params.model_fields) for n in r.names()}))"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0
    found: dict[str, list[str]] = json.loads(out)
    return found


async def _finished(pool: asyncpg.Pool, public_id: str, within: float = 20.0) -> str:
    state: str = await poll(
        lambda: pool.fetchval("SELECT state::text FROM job WHERE public_id = $1", public_id),
        within,
        until=lambda stored: stored in ("succeeded", "failed", "cancelled", "unknown"),
        what=f"{public_id} finished",
    )
    return state


async def test_submit_help_lists_every_registered_kind_with_its_parameters(
    cli_env: dict[str, str],
) -> None:
    # The test kinds too: the list comes from the registry the CLI loads, extra kinds included.
    cli_env = cli_env | {"COLUMNS": "160", "ERRAND_EXTRA_KINDS": "tests.support.kinds"}
    ran = await run_cli(cli_env, "job", "submit", "--help")
    assert ran.code == 0, ran.err
    text = ran.out
    kinds = await registered_kinds(cli_env)
    assert {"demo", "sleep", "agent", "command", "noop", "effect_probe"} <= set(kinds)
    for name, fields in kinds.items():
        assert re.search(rf"^│ {re.escape(name)}\s", text, re.M), (name, text)
        for field in fields:
            assert re.search(rf"^│\s+{re.escape(field)}\s", text, re.M), (name, field, text)
        assert f"errand job submit {name}" in text
    assert "--param" in text
    assert "NAME=VALUE" in text
    assert not PYTHON_TYPES.search(text), PYTHON_TYPES.search(text)


async def test_no_help_shows_python_types_and_commands_come_in_reading_order(
    cli_env: dict[str, str],
) -> None:
    top = await run_cli(cli_env | {"COLUMNS": "160"}, "--help")
    assert top.code == 0, top.err
    commands = re.findall(r"^│ (\w+)\s{2,}", top.out.split("Commands")[1], re.M)
    assert commands[:5] == ["sandbox", "run", "bot", "dashboard", "worker"], commands
    assert commands.index("job") < commands.index("migrate") < commands.index("prune")
    for args in (["job", "list"], ["job", "status"], ["job", "cancel"], ["worker"], ["prune"]):
        ran = await run_cli(cli_env | {"COLUMNS": "160"}, *args, "--help")
        assert ran.code == 0, ran.err
        assert not PYTHON_TYPES.search(ran.out), (args, ran.out)
        assert re.search(r"--json\s{2,}Print", ran.out) or "--json" not in ran.out


async def test_status_shows_the_task_progress_and_the_result_or_the_reason(
    cli_env: dict[str, str], errand_json: ErrandJson, spawn_worker: SpawnWorker, pool: asyncpg.Pool
) -> None:
    failing = await errand_json(
        "job", "submit", "demo", "-p", "steps=5", "-p", "step_seconds=0",
        "-p", "fail_at_step=4", "--json",
    )  # fmt: skip
    done = await errand_json(
        "job", "submit", "demo", "-p", "steps=2", "-p", "step_seconds=0", "--json"
    )
    await spawn_worker()
    assert await _finished(pool, failing["id"]) == "failed"
    assert await _finished(pool, done["id"]) == "succeeded"

    ran = await run_cli(cli_env, "job", "status", failing["id"])
    assert ran.code == 0, ran.err
    lines = ran.out.splitlines()
    assert lines[0].split() == [failing["id"], "demo", "failed"]
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", ran.out, re.M))
    assert fields["progress"] == "3 of 5 steps done"  # what it had done when it failed
    assert fields["reason"] == "failed at step 4 as asked (fail_at_step)"
    assert any(line.startswith("attempt 1 · ") for line in lines), lines
    assert json.loads(fields["params"])["steps"] == 5

    ran = await run_cli(cli_env, "job", "status", done["id"])
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", ran.out, re.M))
    assert fields["progress"] == "2 of 2 steps done"
    assert json.loads(fields["result"]) == {"attempt": 1, "steps": 2}

    # A job asked in words (a prompt, a task or a text parameter) shows it as its task.
    asked = await errand_json("job", "submit", "agent", "-p", "prompt=sum up  the README", "--json")
    ran = await run_cli(cli_env, "job", "status", asked["id"])
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", ran.out, re.M))
    assert fields["task"] == "sum up the README"
    assert "prompt" not in json.loads(fields.get("params", "{}"))


# A one-line command run the way the `errand` entry point runs its commands. It prints without
# flushing (typer.echo flushes, and a failed write is then the command's own error, exit 1), so
# its line is written only as the process ends.
_ONE_LINE_CLI = """
import typer
from jobs.transport import build_cli
app = typer.Typer()
@app.command()
def hello() -> None:
    print("hello")
build_cli(app, help="One line.").run(fast_exit=True)
"""


def _one_line(**popen: object) -> tuple[int, str]:
    """That command with block-buffered output (as a program's stdout usually is), whose line
    is written only when it ends; its exit code and stderr."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run(  # type: ignore[call-overload]
        [sys.executable, "-c", _ONE_LINE_CLI, "hello"],
        env=env,
        cwd=ROOT,
        stderr=subprocess.PIPE,
        timeout=60,
        **popen,
    )
    return done.returncode, done.stderr.decode()


def test_output_that_cannot_be_written_fails_the_command_and_a_closed_stdout_does_not() -> None:
    """The CLI ends without the interpreter's teardown, but not without its output: a line that
    cannot be written at the end (a full disk: /dev/full) is a non-zero exit with one line
    saying so, as Python's own exit reports it; written, it is there; a command started with
    its stdout closed still ends cleanly."""
    import os
    import tempfile

    with open("/dev/full", "wb") as full:
        code, err = _one_line(stdout=full)
    assert code == 120
    assert err.splitlines() == ["error: output not written: [Errno 28] No space left on device"]

    with tempfile.TemporaryFile() as out:
        code, err = _one_line(stdout=out)
        out.seek(0)
        assert (code, err, out.read()) == (0, "", b"hello\n")

    code, err = _one_line(preexec_fn=lambda: os.close(1))
    assert (code, err) == (0, "")
