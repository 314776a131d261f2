"""The ``agent`` kind against a local chat-completions server (the real ``openai`` client over
HTTP): tool calls, budgets from reported usage, cancel aborting the request, errors, no secret."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.runtime.asset import read_asset
from jobs.runtime.registry import Registry
from tests.fakes.chat_server import ChatServer, chat_server
from tests.support.runtime import job_reaches, running_worker

KEY = "sk-test-agent-key-0123456789"
CATALOG = """
[commands.greet]
description = "Greet someone"
argv = ["echo", "hello, {who}"]
retry_safe = true
agent_tool = true
[commands.greet.params.who]
pattern = "[a-z]{1,20}"
"""
SCRIPTS = {
    "answer": [
        {
            "tool_calls": [{"name": "greet", "arguments": {"who": "ann"}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5},
        },
        {"content": "I greeted ann.", "usage": {"prompt_tokens": 40, "completion_tokens": 6}},
    ],
    "two_tools": [
        {
            "tool_calls": [
                {"name": "greet", "arguments": {"who": "ann"}},
                {"name": "greet", "arguments": {"who": "bob"}},
            ]
        },
        {"content": "done"},
    ],
    "wordy": [
        {"content": "a long answer", "usage": {"prompt_tokens": 90, "completion_tokens": 60}}
    ],
    "slow": [{"content": "too late", "delay": 30}],
    "broken": [{"status": 500, "error": "model overloaded"}],
}


@pytest.fixture
async def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ChatServer]:
    catalog = tmp_path / "commands.toml"
    catalog.write_text(CATALOG)
    monkeypatch.setenv("ERRAND_COMMAND_CATALOG", str(catalog))
    async with chat_server(SCRIPTS) as srv:
        monkeypatch.setenv("ERRAND_AGENT_BASE_URL", srv.url)
        monkeypatch.setenv("ERRAND_AGENT_MODEL", "fake-model")
        monkeypatch.setenv("ERRAND_AGENT_API_KEY", KEY)
        monkeypatch.setenv("ERRAND_AGENT_MAX_RETRIES", "0")
        yield srv


async def _run(
    store: JobStore, registry: Registry, dsn: str, tmp: Path, params: dict[str, object]
) -> tuple[str, dict[str, object]]:
    job, _ = await store.submit("agent", params, requester="t")
    async with running_worker(store, registry, dsn, tmp):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed", "cancelled"})
    return done.state.value, {"job": done}


async def test_agent_calls_a_tool_and_returns_the_final_answer(
    server: ChatServer,
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    pool: asyncpg.Pool,
    tmp_path: Path,
) -> None:
    """Step 1: the model asks for greet, the catalog command runs; step 2: the final answer."""
    state, out = await _run(store, registry, db_dsn, tmp_path, {"prompt": "[script:answer] hi"})
    job = out["job"]
    assert state == "succeeded"
    assert job.result == {"answer": "I greeted ann.", "steps": 2, "model": "fake-model"}
    assert job.usage["tokens"] == 71
    assert job.usage["tool_calls"] == 1
    tool_reply = server.requests[1]["messages"][-1]
    assert tool_reply["role"] == "tool"
    assert "hello, ann" in tool_reply["content"]
    assert server.requests[0]["tools"][0]["function"]["name"] == "greet"
    assert await read_asset(pool, job.id, "tool-1-1-greet.log") == b"hello, ann\n"


async def test_agent_key_is_sent_but_never_stored_or_logged(
    server: ChatServer,
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    pool: asyncpg.Pool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The provider sees the bearer key; no job, event, step or asset row and no log line has it."""
    state, _ = await _run(store, registry, db_dsn, tmp_path, {"prompt": "[script:answer] hi"})
    assert state == "succeeded"
    assert all(a == f"Bearer {KEY}" for a in server.authorizations)
    rows = []
    for table in ("job", "event", "step", "asset", "effect", "attempt"):
        records = await pool.fetch(f"SELECT * FROM {table}")
        rows += [json.dumps(dict(r), default=str) for r in records]
    assert not [r for r in rows if KEY in r]
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err


async def test_a_tool_call_budget_of_one_per_step_fails_naming_the_budget(
    server: ChatServer,
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    tmp_path: Path,
) -> None:
    """The model asks for 2 tool calls with a budget of 1 per step: failed, no tool ran."""
    state, out = await _run(
        store,
        registry,
        db_dsn,
        tmp_path,
        {"prompt": "[script:two_tools] hi", "budget": {"step_tool_calls": 1}},
    )
    job = out["job"]
    assert state == "failed"
    assert job.reason == "budget exceeded: tool_calls per step 2 > 1"
    assert len(server.requests) == 1


async def test_a_token_budget_is_enforced_from_the_reported_usage(
    server: ChatServer,
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    tmp_path: Path,
) -> None:
    """150 tokens reported against 100 per step: failed, naming the bound and the usage."""
    state, out = await _run(
        store,
        registry,
        db_dsn,
        tmp_path,
        # Without the ask_user tool: its schema alone would be estimated over this bound.
        {"prompt": "[script:wordy] hi", "budget": {"step_tokens": 100}, "ask_user": False},
    )
    assert state == "failed"
    assert out["job"].reason == "budget exceeded: tokens per step 150 > 100"


async def test_a_provider_error_fails_the_job_with_a_reason(
    server: ChatServer,
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    tmp_path: Path,
) -> None:
    """A 500 from the provider fails the (not retry-safe) job with the error in the reason."""
    state, out = await _run(store, registry, db_dsn, tmp_path, {"prompt": "[script:broken] hi"})
    assert state == "failed"
    assert "model overloaded" in (out["job"].reason or "")


async def test_cancel_during_a_model_call_aborts_the_http_request(
    server: ChatServer,
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    pool: asyncpg.Pool,
    tmp_path: Path,
) -> None:
    """A cancel while the model is thinking closes the connection at once; job cancelled."""
    job, _ = await store.submit("agent", {"prompt": "[script:slow] hi"}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        await asyncio.wait_for(server.started.wait(), 10)
        started = time.monotonic()
        await store.cancel(job.public_id, actor=Actor.REQUESTER, by="t")
        done = await job_reaches(store, job.public_id, {"cancelled", "succeeded", "failed"})
        took = time.monotonic() - started
        for _ in range(50):
            if server.aborted:
                break
            await asyncio.sleep(0.05)
    assert done.state.value == "cancelled"
    assert took < 2.0
    assert server.aborted == ["slow"]
    steps = await pool.fetch("SELECT outcome FROM step WHERE job_id = $1", job.id)
    assert [s["outcome"] for s in steps] == ["cancelled"]


async def test_an_unreachable_model_says_which_url_and_what_to_check_once(
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    unused_tcp_port: int,
) -> None:
    """Nothing listens at the configured URL: the job fails saying which URL could not be
    reached and what to check, and the progress message and the CLI say it once (it read
    "error: APIConnectionError: Connection error." twice, with no URL)."""
    from bot import render
    from jobs.engine.views import JobStatus
    from jobs.ops.cli.render import status_text

    url = f"http://127.0.0.1:{unused_tcp_port}/v1"
    monkeypatch.setenv("ERRAND_AGENT_BASE_URL", url)
    monkeypatch.setenv("ERRAND_AGENT_MAX_RETRIES", "0")
    state, out = await _run(store, registry, db_dsn, tmp_path, {"prompt": "hi"})
    job = out["job"]
    assert state == "failed"
    assert job.reason is not None
    assert job.reason.startswith(f"cannot reach the model at {url} (")
    assert job.reason.endswith(
        "; check ERRAND_AGENT_BASE_URL and that the server is running and reachable from the worker"
    )
    shown = render.progress(job, task="hi", may_resolve=False).content
    assert shown.count("cannot reach the model") == 1
    assert "APIConnectionError" not in shown
    assert status_text(JobStatus(job)).count("cannot reach the model") == 1
