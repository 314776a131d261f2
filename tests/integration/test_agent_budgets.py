"""Hard token budgets of the ``agent`` kind against misbehaving model servers: every request
carries ``max_tokens``, a reply without usage is charged an estimate, a reply that ignores
``max_tokens`` is cut off, and no call is made once nothing is left."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jobs.engine.store import JobStore
from jobs.engine.views import JobView
from jobs.runtime.registry import Registry
from tests.fakes.chat_server import ChatServer, chat_server
from tests.support.runtime import job_reaches, running_worker

CATALOG = """
[commands.greet]
description = "Greet someone"
argv = ["echo", "hello, {who}"]
retry_safe = true
agent_tool = true
[commands.greet.params.who]
pattern = "[a-z]{1,20}"
"""
RUNAWAY = "z" * 25_000
SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "answer": [
        {
            "tool_calls": [{"name": "greet", "arguments": {"who": "ann"}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5},
        },
        {"content": "I greeted ann.", "usage": {"prompt_tokens": 40, "completion_tokens": 6}},
    ],
    # Misbehaving: no usage at all, a reply of about 150 tokens.
    "nousage": [{"content": "y" * 600, "omit_usage": True}],
    # Misbehaving: ignores max_tokens and sends 25,000 characters (and says so in its usage).
    "runaway": [
        {
            "content": RUNAWAY,
            "ignore_max_tokens": True,
            "usage": {"prompt_tokens": 12, "completion_tokens": 6250},
        }
    ],
}


@pytest.fixture
async def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ChatServer]:
    catalog = tmp_path / "commands.toml"
    catalog.write_text(CATALOG)
    monkeypatch.setenv("ERRAND_COMMAND_CATALOG", str(catalog))
    async with chat_server(SCRIPTS) as srv:
        monkeypatch.setenv("ERRAND_AGENT_BASE_URL", srv.url)
        monkeypatch.setenv("ERRAND_AGENT_MODEL", "fake-model")
        monkeypatch.setenv("ERRAND_AGENT_API_KEY", "sk-test-budget-key-0123456789")
        monkeypatch.setenv("ERRAND_AGENT_MAX_RETRIES", "0")
        yield srv


async def _run(
    store: JobStore, registry: Registry, dsn: str, tmp: Path, params: dict[str, object]
) -> JobView:
    job, _ = await store.submit("agent", params, requester="t")
    async with running_worker(store, registry, dsn, tmp):
        return await job_reaches(store, job.public_id, {"succeeded", "failed", "cancelled"})


async def test_every_request_carries_max_tokens_the_smaller_of_step_and_job_left(
    server: ChatServer, store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    """Step 1 may use the step's 1,000; step 2 only the job's 1,010 - 25 = 985."""
    budget = {"step_tokens": 1000, "job_tokens": 1010}
    done = await _run(
        store, registry, db_dsn, tmp_path, {"prompt": "[script:answer] hi", "budget": budget}
    )
    assert done.state.value == "succeeded"
    assert [r.get("max_tokens") for r in server.requests] == [1000, 985]


@pytest.mark.parametrize("script", ["nousage", "runaway"])
async def test_a_misbehaving_server_cannot_take_a_job_past_its_token_bound(
    server: ChatServer,
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    tmp_path: Path,
    script: str,
) -> None:
    """No usage reported, or max_tokens ignored with a 25,000-character reply: the job fails
    "budget exceeded: tokens ...", its recorded usage is within one call's max_tokens of the
    bound (marked as estimated), and the request carried max_tokens."""
    bound = 100
    done = await _run(
        store,
        registry,
        db_dsn,
        tmp_path,
        # Without the ask_user tool: its schema alone would be estimated over this bound.
        {"prompt": f"[script:{script}] hi", "budget": {"step_tokens": bound}, "ask_user": False},
    )
    assert done.state.value == "failed"
    assert (done.reason or "").startswith("budget exceeded: tokens per step ")
    [request] = server.requests
    assert request["max_tokens"] == bound
    used = done.usage["tokens"]
    assert bound < used <= bound + request["max_tokens"]
    assert done.usage["estimated_tokens"] == used
    assert done.reason == (
        f"budget exceeded: tokens per step {used} > {bound} ({used} of them estimated)"
    )
    assert RUNAWAY not in str(done.result) + str(done.error)


async def test_no_call_is_made_when_the_request_alone_needs_more_than_is_left(
    server: ChatServer, store: JobStore, registry: Registry, db_dsn: str, tmp_path: Path
) -> None:
    """20 tokens for the whole job cannot carry the request and its tool schema: no request."""
    done = await _run(
        store,
        registry,
        db_dsn,
        tmp_path,
        {"prompt": "[script:answer] hi", "budget": {"job_tokens": 20}},
    )
    assert done.state.value == "failed"
    assert (done.reason or "").startswith("budget exceeded: tokens per job 0 of 20 used; ")
    assert "no call made" in (done.reason or "")
    assert server.requests == []
