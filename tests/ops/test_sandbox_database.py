"""``errand sandbox``'s embedded PostgreSQL: stopped on every exit, found and adopted after a
crash, and shared with ``errand job ...`` run from another terminal."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import psutil
import pytest

from tests.support.cli import CLI, ROOT, run_cli
from tests.support.http import http_get
from tests.support.ports import free_port

pytestmark = pytest.mark.slow

# Settings that would point the sandbox (or the CLI) at another database than its own.
SCRUBBED = ("DATABASE_URL", "ERRAND_DB_URL", "TEST_DATABASE_URL", "DISCORD_TOKEN")
HINT = re.compile(r"its jobs from another terminal: (.*) errand job list$", re.MULTILINE)


def postgres_serving(pgdata: Path) -> list[psutil.Process]:
    """Live postgres processes of this data directory: its postmaster (``-D pgdata``) and the
    one ``postmaster.pid`` names."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE or "postgres" not in (
            proc.info["name"] or ""
        ):
            continue
        if str(pgdata) in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    pid_file = pgdata / "postmaster.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text().split()[0])
        if psutil.pid_exists(pid) and all(p.pid != pid for p in found):
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE and "postgres" in proc.name():
                found.append(proc)
    return found


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED and not k.startswith("ERRAND_")}
    return env | {"PYTHONPATH": str(ROOT), "ERRAND_DATA_DIR": str(home)}


@asynccontextmanager
async def sandbox(data_dir: Path, env: dict[str, str], log: Path) -> AsyncIterator[str]:
    """``errand sandbox`` until its banner; yields its output so far (ends it with SIGKILL if the
    test did not stop it)."""
    # The log is shared by successive sandboxes: wait for this one's banner, not an earlier one's.
    earlier = len(_read(log))
    with log.open("ab") as sink:
        proc = await asyncio.create_subprocess_exec(
            *CLI,
            "sandbox",
            "--data-dir",
            str(data_dir),
            "--port",
            str(free_port()),
            env=env,
            cwd=ROOT,
            stdout=sink,
            stderr=sink,
        )
    sandbox.proc = proc  # type: ignore[attr-defined]
    try:
        deadline = time.monotonic() + 60
        while HINT.search(_read(log)[earlier:]) is None:
            assert proc.returncode is None, _read(log)[-3000:]
            assert time.monotonic() < deadline, _read(log)[-3000:]
            await asyncio.sleep(0.1)
        yield _read(log)[earlier:]
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def _read(log: Path) -> str:
    return log.read_text(errors="replace") if log.exists() else ""


async def _gone(pgdata: Path, within: float = 15.0) -> list[psutil.Process]:
    deadline = time.monotonic() + within
    while True:
        left = postgres_serving(pgdata)
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.2)


async def test_a_sigkilled_sandbox_leaves_postgres_that_the_next_one_adopts_and_stops(
    data_root: Path,
) -> None:
    """SIGKILL a running sandbox: its PostgreSQL outlives it. Start it again: it finds that
    server and uses it (the jobs are still there). Stop it with Ctrl-C (SIGINT): no postgres
    process is left for its data directory."""
    data_dir = data_root / "sandbox"
    pgdata = data_dir / "pgdata"
    env = _environment(data_root / "home")
    log = data_root / "sandbox.log"

    async with sandbox(data_dir, env, log) as out:
        first = sandbox.proc  # type: ignore[attr-defined]
        [hint] = HINT.findall(out)
        assert postgres_serving(pgdata)
        cli_env = env | dict(kv.split("=", 1) for kv in shlex.split(hint))
        made = await run_cli(cli_env, "job", "submit", "noop", "--json")
        assert made.code == 0, made.err
        job_id = json.loads(made.out)["id"]
        first.kill()
        await first.wait()
    survivors = postgres_serving(pgdata)
    assert survivors, "the crash should have left the server running"

    async with sandbox(data_dir, env, log):
        second = sandbox.proc  # type: ignore[attr-defined]
        assert {p.pid for p in postgres_serving(pgdata)} & {p.pid for p in survivors}  # adopted
        status = await run_cli(cli_env, "job", "status", job_id, "--json")
        assert status.code == 0, status.err
        second.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(second.wait(), 30) == 0, _read(log)[-3000:]
    assert await _gone(pgdata) == []


async def test_errand_job_in_another_terminal_sees_the_sandboxs_jobs(data_root: Path) -> None:
    """The sandbox prints the command line that reaches its database; with it, a job submitted
    from the CLI is run by the sandbox's worker and its status read back, and the sandbox's
    server keeps running after each CLI command (it still has a user). Like every long-running
    process, the sandbox answers /readyz: database, migrations, worker and gateway all ok."""
    data_dir = data_root / "sandbox"
    env = _environment(data_root / "home")
    sandbox_env = env | {"ERRAND_HEALTH_PORT": "0", "ERRAND_LOG_LEVEL": "info"}
    log = data_root / "sandbox.log"
    async with sandbox(data_dir, sandbox_env, log) as out:
        # The health server may start after the banner: wait for its line in the log.
        deadline = time.monotonic() + 30
        while not (
            ports := [
                json.loads(line)["port"]
                for line in _read(log).splitlines()
                if line.startswith("{") and '"health.listening"' in line
            ]
        ):
            assert time.monotonic() < deadline, _read(log)[-3000:]
            await asyncio.sleep(0.1)
        [port] = ports
        deadline = time.monotonic() + 30
        while (ready := await http_get(port, "/readyz"))[0] != 200:
            assert time.monotonic() < deadline, ready
            await asyncio.sleep(0.2)
        assert json.loads(ready[1])["checks"] == dict.fromkeys(
            ["database", "migrations", "worker", "gateway"], "ok"
        )
        [hint] = HINT.findall(out)
        assert hint == f"ERRAND_DB_DATA_DIR={shlex.quote(str(data_dir / 'pgdata'))}"
        cli_env = env | dict(kv.split("=", 1) for kv in shlex.split(hint))
        made = await run_cli(cli_env, "job", "submit", "noop", "--json")
        assert made.code == 0, made.err
        job_id = json.loads(made.out)["id"]
        deadline = time.monotonic() + 30
        while True:
            status = await run_cli(cli_env, "job", "status", job_id, "--json")
            assert status.code == 0, status.err
            if json.loads(status.out)["state"] == "succeeded":
                break
            assert time.monotonic() < deadline, status.out
            await asyncio.sleep(0.2)
        listed = await run_cli(cli_env, "job", "list", "--json")
        assert job_id in [j["id"] for j in json.loads(listed.out)["jobs"]]
        assert postgres_serving(data_dir / "pgdata")
        proc = sandbox.proc  # type: ignore[attr-defined]
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    assert await _gone(data_dir / "pgdata") == []


async def test_a_one_shot_command_stops_the_embedded_server_it_started_when_it_exits(
    data_root: Path,
) -> None:
    """``errand job ...`` with no server running starts the embedded one, answers, and, as its
    only user, stops it on the way out (one-shot commands skip the interpreter's teardown at
    exit, not the exit handlers that stop the server); a bad id exits 2 the same way."""
    pgdata = data_root / "pgdata"
    env = _environment(data_root / "home") | {"ERRAND_DB_DATA_DIR": str(pgdata)}
    made = await run_cli(env, "job", "submit", "noop", "--json")
    assert made.code == 0, made.err
    job_id = json.loads(made.out)["id"]
    assert await _gone(pgdata) == []
    status = await run_cli(env, "job", "status", job_id, "--json")
    assert status.code == 0, status.err
    assert json.loads(status.out)["id"] == job_id  # the job outlived the server's stop
    assert await _gone(pgdata) == []
    missing = await run_cli(env, "job", "status", "zzzzzzzz")
    assert missing.code == 2
    assert "zzzzzzzz" in missing.err
    assert await _gone(pgdata) == []
