"""The ``command`` kind against processes that try to outlive it: a background child holding the
output pipe, a ``setsid`` grandchild, an orphan that left the group; and a command that is not
retry-safe stopped by a worker shutdown (real ``errand worker`` process)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.support.cli import CLI, ROOT, cli_environment
from tests.support.polling import poll
from tests.support.runtime import job_reaches, running_worker


def _catalog(tmp: Path) -> str:
    return f"""
[commands.background]
# Exits 0 at once, leaving a child that holds stdout open for 30 s.
argv = ["sh", "-c", "sleep 30 & echo $! > {tmp}/background.pid; echo done"]
timeout = 20
retry_safe = true

[commands.escaper]
# A grandchild that leaves the process group (setsid) while its parent keeps running.
argv = ["sh", "-c", "setsid sh -c 'echo $$ > {tmp}/setsid.pid; exec sleep 300' & sleep 300"]
retry_safe = true

[commands.orphan]
# A grandchild that leaves the group and whose parent exits at once: an orphan of init.
argv = ["sh", "-c", "(setsid sh -c 'echo $$ > {tmp}/orphan.pid; exec sleep 300' &); sleep 300"]
retry_safe = true

[commands.once]
# Not retry-safe: runs as a guarded effect.
argv = ["sh", "-c", "echo started; sleep 30"]
retry_safe = false
"""


@pytest.fixture(autouse=True)
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "commands.toml"
    path.write_text(_catalog(tmp_path))
    monkeypatch.setenv("ERRAND_COMMAND_CATALOG", str(path))
    monkeypatch.setenv("ERRAND_COMMAND_KILL_GRACE_SECONDS", "0.5")
    return path


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _read_pid(path: Path) -> int | None:
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text.isdigit() else None


async def _pid_in(path: Path) -> int:
    async def written() -> bool:
        return await asyncio.to_thread(_read_pid, path) is not None

    await poll(written, within=10)
    pid = _read_pid(path)
    assert pid is not None
    return pid


async def test_a_command_ends_when_it_exits_though_a_background_child_holds_its_output(
    store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    """``sleep 30 & echo done``: the job succeeds at once with exit code 0 (not "timed out"
    after its 20 s timeout), and the background child is stopped with it."""
    job, _ = await store.submit("command", {"name": "background"}, requester="t")
    started = time.monotonic()
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"}, within=25)
    assert (done.state.value, done.reason) == ("succeeded", None)
    assert done.result["exit_code"] == 0
    assert done.result["tail"] == ["done"]
    assert time.monotonic() - started < 8
    pid = _read_pid(tmp_path / "background.pid")
    assert pid is not None

    async def gone() -> bool:
        return not _alive(pid)

    await poll(gone, within=5)


@pytest.mark.parametrize("name", ["escaper", "orphan"])
async def test_cancel_ends_descendants_that_left_the_process_group(
    name: str, store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    """A grandchild started with ``setsid`` (its parent still running, or already gone so it
    is an orphan of init) does not survive the job's cancel."""
    job, _ = await store.submit("command", {"name": name}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        pid = await _pid_in(tmp_path / f"{'setsid' if name == 'escaper' else 'orphan'}.pid")
        assert _alive(pid)
        assert os.getpgid(pid) == pid  # it really left the job's process group
        await store.cancel(job.public_id, actor=Actor.REQUESTER, by="t")
        done = await job_reaches(store, job.public_id, {"cancelled", "failed"}, within=15)
    assert done.state.value == "cancelled"

    async def gone() -> bool:
        return not _alive(pid)

    await poll(gone, within=5)


async def test_a_command_that_is_not_retry_safe_stopped_by_a_shutdown_ends_truthfully(
    store: JobStore, db_dsn: str, tmp_path: Path, catalog: Path
) -> None:
    """SIGTERM to the worker while a non-retry-safe command runs: the command is stopped, never
    run again (a second worker is up), and the job says so, not "exited with code None"."""
    env = cli_environment(db_dsn, tmp_path / "data") | {
        "ERRAND_COMMAND_CATALOG": str(catalog),
        "ERRAND_COMMAND_KILL_GRACE_SECONDS": "0.5",
        "ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS": "0.5",
        "ERRAND_WORKER_RETRY_BASE_SECONDS": "0",
    }
    job, _ = await store.submit("command", {"name": "once"}, requester="t")
    procs = []
    try:
        first = await asyncio.create_subprocess_exec(
            *CLI, "worker", env=env, cwd=ROOT, stderr=asyncio.subprocess.DEVNULL
        )
        procs.append(first)
        await job_reaches(store, job.public_id, {"running"}, within=30)
        await asyncio.sleep(1.0)  # the command has started
        second = await asyncio.create_subprocess_exec(
            *CLI, "worker", env=env, cwd=ROOT, stderr=asyncio.subprocess.DEVNULL
        )
        procs.append(second)
        first.send_signal(signal.SIGTERM)
        await asyncio.wait_for(first.wait(), 15)
        done = await job_reaches(
            store, job.public_id, {"succeeded", "failed", "unknown"}, within=20
        )
        await asyncio.sleep(1.0)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 20)
    assert done.state.value == "failed"
    assert done.reason is not None
    assert "code None" not in done.reason
    assert done.reason.startswith(
        "command once was stopped before it finished (worker shutdown); it is not retry-safe"
    )
    assert (await store.get(job.public_id)).attempts == 1
