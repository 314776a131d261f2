"""Resume with real worker processes killed with SIGKILL: a 40-step ``demo`` re-runs at most the
steps after its last checkpoint, and an ``agent`` never repeats a model call it completed."""

from __future__ import annotations

import signal
from pathlib import Path

import asyncpg

from jobs.engine.store import JobStore
from tests.fakes.chat_server import chat_server
from tests.support.polling import poll
from tests.support.runtime import job_reaches
from tests.support.worker_process import start_worker, stop_worker


async def _checkpoint(pool: asyncpg.Pool, job_id: int) -> dict[str, object] | None:
    value: dict[str, object] | None = await pool.fetchval(
        "SELECT checkpoint FROM job WHERE id = $1", job_id
    )
    return value


async def test_a_demo_killed_three_times_reruns_at_most_the_steps_after_its_checkpoint(
    store: JobStore, pool: asyncpg.Pool, db_dsn: str, tmp_path: Path
) -> None:
    """SIGKILL three times, a fresh worker each time: succeeded, no failure counted, and each
    new attempt starts right after the checkpoint saved before the kill."""
    job, _ = await store.submit("demo", {"steps": 40, "step_seconds": 0.1}, requester="t")
    proc = await start_worker(db_dsn, tmp_path)
    at_kill: list[int] = []
    for target in (8, 18, 28):

        async def reached(target: int = target) -> bool:
            point = await _checkpoint(pool, job.id)
            return point is not None and int(str(point["done"])) >= target

        await poll(reached, within=40)
        await stop_worker(proc, signal.SIGKILL)
        point = await _checkpoint(pool, job.id)
        assert point is not None
        at_kill.append(int(str(point["done"])))
        proc = await start_worker(db_dsn, tmp_path)
    try:
        done = await job_reaches(
            store, job.public_id, {"succeeded", "failed", "unknown"}, within=60
        )
    finally:
        await stop_worker(proc)
    assert (done.state.value, done.attempts, done.failures) == ("succeeded", 4, 0)
    attempts = await pool.fetch(
        "SELECT id, outcome FROM attempt WHERE job_id = $1 ORDER BY number", job.id
    )
    assert [a["outcome"] for a in attempts] == ["abandoned"] * 3 + ["succeeded"]
    steps = await pool.fetch(
        "SELECT attempt_id, name, outcome FROM step WHERE job_id = $1 ORDER BY id", job.id
    )
    for attempt, checkpoint in zip(attempts[1:], at_kill, strict=True):
        first = next(s for s in steps if s["attempt_id"] == attempt["id"])
        assert first["name"] == f"step {checkpoint + 1}"
    ok = [s["name"] for s in steps if s["outcome"] == "ok"]
    assert sorted(set(ok)) == sorted(f"step {n}" for n in range(1, 41))
    rerun = {name for name in ok if ok.count(name) > 1}
    assert rerun <= {f"step {c + 1}" for c in at_kill}
    assert {s["outcome"] for s in steps} <= {"ok", "interrupted"}
    assert done.usage["steps"] == len(ok)


CATALOG = """
[commands.nap]
description = "Rest a moment"
argv = ["sleep", "{s}"]
retry_safe = true
agent_tool = true
[commands.nap.params.s]
type = "integer"
min = 0
max = 10
"""
SCRIPTS = {
    "resume": [
        {
            "tool_calls": [{"name": "nap", "arguments": {"s": 2}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5},
        },
        {"content": "rested", "usage": {"prompt_tokens": 40, "completion_tokens": 6}},
    ]
}


async def test_an_agent_killed_between_two_model_calls_does_not_repeat_the_first(
    store: JobStore, pool: asyncpg.Pool, db_dsn: str, tmp_path: Path
) -> None:
    """SIGKILL while the first reply's tool runs; a fresh worker resumes the conversation: the
    server sees two requests in all, and the first call's tokens are charged once."""
    catalog = tmp_path / "commands.toml"
    catalog.write_text(CATALOG)
    async with chat_server(SCRIPTS) as server:
        env = {
            "ERRAND_COMMAND_CATALOG": str(catalog),
            "ERRAND_AGENT_BASE_URL": server.url,
            "ERRAND_AGENT_MODEL": "fake-model",
            "ERRAND_AGENT_API_KEY": "sk-test-resume-key-0123456789",
            "ERRAND_AGENT_MAX_RETRIES": "0",
        }
        job, _ = await store.submit("agent", {"prompt": "[script:resume] rest"}, requester="t")
        proc = await start_worker(db_dsn, tmp_path, **env)

        async def first_reply_kept() -> bool:
            point = await _checkpoint(pool, job.id)
            return server.count("resume") == 1 and point is not None and bool(point["started"])

        await poll(first_reply_kept, within=30)
        await stop_worker(proc, signal.SIGKILL)
        proc = await start_worker(db_dsn, tmp_path, **env)
        try:
            done = await job_reaches(
                store, job.public_id, {"succeeded", "failed", "unknown"}, within=40
            )
        finally:
            await stop_worker(proc)
    assert done.state.value == "succeeded", done.reason
    assert done.result == {"answer": "rested", "steps": 2, "model": "fake-model"}
    assert server.count("resume") == 2
    second = server.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert (done.usage["tokens"], done.usage["steps"], done.failures) == (71, 2, 0)
    steps = await pool.fetch("SELECT name, outcome FROM step WHERE job_id = $1 ORDER BY id", job.id)
    assert [(s["name"], s["outcome"]) for s in steps] == [
        ("model 1", "interrupted"),
        ("model 1", "ok"),
        ("model 2", "ok"),
    ]
