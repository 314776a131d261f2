"""Acceptance through the real CLI in subprocesses: ``errand worker`` plus ``errand job ...``
for the demo, command and agent kinds (the agent against a local chat-completions server)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.acceptance.conftest import ErrandJson, SpawnWorker
from tests.fakes.chat_server import chat_server


async def _until_done(errand_json: ErrandJson, job_id: str, seen: list[Any]) -> dict[str, Any]:
    for _ in range(100):
        status = await errand_json("job", "status", job_id, "--json")
        seen.append((status["state"], (status["progress"] or {}).get("done")))
        if status["state"] in ("succeeded", "failed", "cancelled", "unknown"):
            return status
    raise AssertionError(f"job {job_id} did not finish")


async def test_demo_job_runs_to_succeeded_with_progress_visible_at_each_step(
    errand_json: ErrandJson, spawn_worker: SpawnWorker
) -> None:
    """errand job submit demo --param steps=5 --json -> succeeded; status showed every step."""
    await spawn_worker()
    # Each step's progress shows for step_seconds; one `errand job status` takes about 0.25 s
    # (a new process), so 1.5 s leaves room for several looks at every step even on a loaded
    # machine (it was 2 s: 10 s of waiting).
    job = await errand_json(
        "job", "submit", "demo", "--param", "steps=5", "--param", "step_seconds=1.5", "--json"
    )
    assert job["state"] == "queued"
    seen: list[Any] = []
    status = await _until_done(errand_json, job["id"], seen)
    assert status["state"] == "succeeded"
    assert {d for s, d in seen if s == "running" and d} >= {1, 2, 3, 4}
    assert status["progress"]["done"] == 5
    assert [s["outcome"] for s in status["steps"]] == ["ok"] * 5
    assert status["usage"]["steps"] == 5


async def test_command_job_runs_a_real_process_and_keeps_its_log(
    errand_json: ErrandJson, spawn_worker: SpawnWorker
) -> None:
    """errand job submit command --param name=hello runs echo; the log is a kept asset."""
    await spawn_worker()
    job = await errand_json(
        "job",
        "submit",
        "command",
        "--param",
        "name=hello",
        "--param",
        'args={"who": "ann"}',
        "--json",
    )
    status = await _until_done(errand_json, job["id"], [])
    assert status["state"] == "succeeded"
    assert status["result"]["exit_code"] == 0
    assert [a["name"] for a in status["assets"]] == ["command.log"]
    assert status["assets"][0]["size"] == len(b"hello, ann\n")


async def test_agent_job_finishes_and_fails_with_a_tool_call_budget_of_one(
    errand_json: ErrandJson, spawn_worker: SpawnWorker
) -> None:
    """An agent job against the local chat-completions server answers; the same job with a
    tool-call budget of 1 per step fails naming that budget."""
    script = [
        {"tool_calls": [{"name": "date", "arguments": {}}, {"name": "hello", "arguments": {}}]},
        {"content": "It is today, and hello."},
    ]
    async with chat_server({"acc": script}) as server:
        await spawn_worker(
            ERRAND_AGENT_BASE_URL=server.url,
            ERRAND_AGENT_API_KEY="sk-acceptance-key",
            ERRAND_AGENT_MAX_RETRIES="0",
        )
        ok = await errand_json(
            "job", "submit", "agent", "--param", "prompt=[script:acc] what now", "--json"
        )
        tight = await errand_json(
            "job",
            "submit",
            "agent",
            "--param",
            "prompt=[script:acc] again",
            "--param",
            'budget={"step_tool_calls": 1}',
            "--json",
        )
        done = await _until_done(errand_json, ok["id"], [])
        failed = await _until_done(errand_json, tight["id"], [])
    assert done["state"] == "succeeded"
    assert done["result"]["answer"] == "It is today, and hello."
    assert failed["state"] == "failed"
    assert failed["reason"] == "budget exceeded: tool_calls per step 2 > 1"


async def test_status_shows_one_progress_line_and_the_attempt_and_failure_counts(
    errand_json: ErrandJson,
    run_errand: Callable[..., Awaitable[Any]],
    spawn_worker: SpawnWorker,
) -> None:
    """The human and JSON status agree with Discord: "3 of 3 steps done" (never None) and
    "attempt 1 · 0 failures (max 3)"; --json carries failures and the same line."""
    await spawn_worker()
    job = await errand_json(
        "job", "submit", "demo", "--param", "steps=3", "--param", "step_seconds=0.2", "--json"
    )
    status = await _until_done(errand_json, job["id"], [])
    assert (status["state"], status["attempts"], status["failures"]) == ("succeeded", 1, 0)
    assert status["progress_line"] == "3 of 3 steps done"
    ran = await run_errand("job", "status", job["id"])
    assert ran.code == 0
    lines = ran.out.splitlines()
    assert "progress: 3 of 3 steps done" in lines
    assert any(line.startswith("run time ") and " · wall time " in line for line in lines)
    assert "attempt 1 · 0 failures (max 3)" in lines
    assert "None" not in ran.out
