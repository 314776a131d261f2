"""The ``command`` kind with real processes: catalog rules, logs as assets, exit codes, cancel."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.errors import InvalidParams
from jobs.kinds.command import CommandSpec, run_command
from jobs.runtime.asset import read_asset
from jobs.runtime.registry import Registry
from tests.support.polling import poll
from tests.support.runtime import claim_context, job_reaches, noop, registry_of, running_worker

CATALOG = """
[commands.greet]
argv = ["echo", "hello, {who}"]
retry_safe = true
[commands.greet.params.who]
pattern = "[a-z ]{1,20}"

[commands.fail]
argv = ["sh", "-c", "echo first; echo oops >&2; exit 3"]

[commands.envshow]
argv = ["sh", "-c", "echo visible=$VISIBLE hidden=$HIDDEN fixed=$FIXED"]
env = ["PATH", "VISIBLE"]
set_env = { FIXED = "yes" }
retry_safe = true

[commands.family]
# A parent with a grandchild in the same process group; prints the group id first.
argv = ["sh", "-c", "echo $$; sleep 300 & while true; do echo tick; sleep 0.1; done"]
retry_safe = true

[commands.stubborn]
# Ignores SIGTERM: only SIGKILL (after the kill grace) stops it.
argv = ["sh", "-c", "trap '' TERM; echo $$; while true; do sleep 0.1; done"]
retry_safe = true

[commands.slow]
argv = ["sleep", "30"]
timeout = 0.5
retry_safe = true
"""


@pytest.fixture(autouse=True)
def catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "commands.toml"
    path.write_text(CATALOG)
    monkeypatch.setenv("ERRAND_COMMAND_CATALOG", str(path))
    monkeypatch.setenv("ERRAND_COMMAND_KILL_GRACE_SECONDS", "0.5")
    return path


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


async def test_a_catalog_command_runs_and_keeps_its_log(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """greet runs echo with the declared parameter as one argv element; the log is an asset."""
    job, _ = await store.submit(
        "command", {"name": "greet", "args": {"who": "ann and bob"}}, requester="t"
    )
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
    assert (done.state.value, done.result["exit_code"]) == ("succeeded", 0)
    assert await read_asset(pool, done.id, "command.log") == b"hello, ann and bob\n"
    status = await store.status(done.public_id)
    assert [a["name"] for a in status.assets] == ["command.log"]


async def test_user_text_cannot_add_argv_or_reach_a_shell(store: JobStore) -> None:
    """Undeclared parameters, pattern mismatches, option-like values and unknown commands are
    refused at submit time."""
    bad = [
        {"name": "greet", "args": {"who": "x; rm -rf /"}},
        {"name": "greet", "args": {"who": "-n"}},
        {"name": "greet", "args": {"who": "ann", "extra": "--force"}},
        {"name": "greet"},
        {"name": "sh"},
    ]
    for params in bad:
        with pytest.raises(InvalidParams):
            await store.submit("command", params, requester="t")


async def test_non_zero_exit_fails_with_exit_code_and_tail(
    store: JobStore, registry: Registry, db_dsn: str, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A non-retry-safe command exiting 3 fails at once, naming the code and the last lines."""
    job, _ = await store.submit("command", {"name": "fail"}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
    assert (done.state.value, done.attempts) == ("failed", 1)
    assert done.reason == "command fail exited with code 3; tail: first | oops"
    assert await read_asset(pool, done.id, "command.log") == b"first\noops\n"
    effect = await pool.fetchrow("SELECT status FROM effect WHERE job_id = $1", done.id)
    assert effect["status"] == "done"  # it ran as a guarded effect: never re-run blindly


async def test_only_allowed_environment_reaches_the_command(
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    pool: asyncpg.Pool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Variables not on the allow-list (e.g. secrets) are not passed."""
    monkeypatch.setenv("VISIBLE", "v")
    monkeypatch.setenv("HIDDEN", "sk-secretsecret")
    job, _ = await store.submit("command", {"name": "envshow"}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
    assert await read_asset(pool, done.id, "command.log") == b"visible=v hidden= fixed=yes\n"


async def test_timeout_stops_the_command_and_fails(
    store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    """A command over its catalog timeout is stopped and the job fails saying so."""
    job, _ = await store.submit("command", {"name": "slow"}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
    assert done.state.value == "failed"
    assert (done.reason or "").startswith("command slow timed out after 0.5s")


@pytest.mark.parametrize("name", ["family", "stubborn"])
async def test_cancel_during_a_command_kills_its_whole_process_group(
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    pool: asyncpg.Pool,
    tmp_path: Path,
    name: str,
) -> None:
    """Cancel sends SIGTERM to the group (SIGKILL after the grace for one that ignores it); the
    job ends cancelled, no process of the group survives, and the log so far is kept."""
    job, _ = await store.submit("command", {"name": name}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        await job_reaches(store, job.public_id, {"running"})

        async def has_pid() -> bool:
            progress = (await store.get(job.public_id)).progress
            return bool(progress and progress.get("done"))

        await poll(has_pid)
        started = time.monotonic()
        await store.cancel(job.public_id, actor=Actor.REQUESTER, by="t")
        done = await job_reaches(store, job.public_id, {"cancelled", "failed", "succeeded"})
        took = time.monotonic() - started
    assert done.state.value == "cancelled"
    log = await read_asset(pool, done.id, "command.log")
    log_pid = int(log.split(b"\n", 1)[0])
    assert group_members(log_pid) == []
    assert took < 3.0


async def test_command_output_with_a_nul_byte_does_not_break_the_command(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A NUL byte in a command's output (progress note, tail) is not a failure of the command."""
    store = JobStore(pool, registry_of(noop=noop))
    await store.submit("noop", {}, requester="t")
    ctx = await claim_context(store, "w1", tmp_path)
    spec = CommandSpec(name="nul", argv=["printf", "a\\000b\\n"])
    result = await run_command(ctx, spec, {}, log_asset="command.log", progress=True)
    await ctx.flush()
    assert (result["exit_code"], result["tail"]) == (0, ["a\ufffdb"])


def test_negative_number_cannot_pass_as_an_option() -> None:
    """A number parameter starting with '-' is refused like text, unless allow_dash is set."""
    spec = CommandSpec.model_validate(
        {"name": "head", "argv": ["head", "{n}"], "params": {"n": {"type": "integer"}}}
    )
    with pytest.raises(ValueError, match="must not start with '-'"):
        spec.argv_for({"n": -5})
    spec = CommandSpec.model_validate(
        {
            "name": "head",
            "argv": ["head", "-n", "{n}"],
            "params": {"n": {"type": "integer", "allow_dash": True}},
        }
    )
    assert spec.argv_for({"n": -5}) == ["head", "-n", "-5"]


async def test_command_output_line_longer_than_the_stream_limit_is_not_a_failure(
    pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """A 100 kB line without a break (minified JSON) is output like any other, not an error."""
    store = JobStore(pool, registry_of(noop=noop))
    await store.submit("noop", {}, requester="t")
    ctx = await claim_context(store, "w1", tmp_path)
    spec = CommandSpec(name="wide", argv=[sys.executable, "-c", "print('x' * 100_000)"])
    result = await run_command(ctx, spec, {}, log_asset="command.log", progress=True)
    await ctx.flush()
    log = await read_asset(pool, ctx.job_id, "command.log")
    assert (result["exit_code"], result["lines"], len(log)) == (0, 1, 100_001)


async def test_command_that_ran_is_not_run_again_when_its_log_cannot_be_stored(
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A non-retry-safe command runs as a guarded effect: once it ran, failing to keep its log
    (a full disk, an unwritable assets dir) must not mark the effect failed and run it again."""
    ledger = tmp_path / "ledger"
    catalog = tmp_path / "commands.toml"
    catalog.write_text(
        "[commands.charge]\n"
        f'argv = ["sh", "-c", "echo charged >> {ledger}; head -c 300000 /dev/zero"]\n'
    )
    monkeypatch.setenv("ERRAND_COMMAND_CATALOG", str(catalog))
    not_a_dir = tmp_path / "assets"
    not_a_dir.write_text("a file where the assets directory should be")
    job, _ = await store.submit("command", {"name": "charge"}, requester="t")
    async with running_worker(store, registry, db_dsn, not_a_dir, retry_base_seconds=0):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed", "unknown"})
    assert (done.state, ledger.read_text()) == ("succeeded", "charged\n")
