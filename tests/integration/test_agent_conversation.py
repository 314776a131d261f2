"""The ``agent`` kind talks back, against the project's fake chat-completions server and a real
worker: its ``ask_user`` tool, follow-ups as steering (once each, in order, across a worker
stop), and approvals of catalog commands marked ``approve`` (a denial reaches the model, and
the command never runs without an approval)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.fakes.chat_server import ChatServer, chat_server
from tests.support.catalog import MARK_CATALOG
from tests.support.polling import poll
from tests.support.runtime import job_reaches, running_worker


def scripts(marker: Path) -> dict[str, list[dict[str, Any]]]:
    mark = {"name": "mark", "arguments": {"path": str(marker)}}
    return {
        "ask": [
            {
                "tool_calls": [
                    {
                        "name": "ask_user",
                        "arguments": {"question": "Which colour?", "choices": ["red", "blue"]},
                    }
                ]
            },
            {"content": "You chose."},
        ],
        "steer": [
            {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Go on?"}}]},
            {"tool_calls": [{"name": "ask_user", "arguments": {"question": "And now?"}}]},
            {"content": "finished"},
        ],
        "approve": [{"tool_calls": [mark]}, {"content": "marked"}],
    }


@pytest.fixture
async def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ChatServer]:
    catalog = tmp_path / "commands.toml"
    catalog.write_text(MARK_CATALOG)
    monkeypatch.setenv("ERRAND_COMMAND_CATALOG", str(catalog))
    async with chat_server(scripts(tmp_path / "marks")) as srv:
        monkeypatch.setenv("ERRAND_AGENT_BASE_URL", srv.url)
        monkeypatch.setenv("ERRAND_AGENT_MODEL", "fake-model")
        monkeypatch.setenv("ERRAND_AGENT_API_KEY", "sk-test")
        monkeypatch.setenv("ERRAND_AGENT_MAX_RETRIES", "0")
        yield srv


def tool_answers(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_ask_user_parks_the_agent_and_the_answer_is_the_tools_result(
    server: ChatServer, store: JobStore, registry: Registry, db_dsn: str
) -> None:
    job, _ = await store.submit("agent", {"prompt": "[script:ask] pick"}, requester="alice")
    async with running_worker(store, registry, db_dsn, park_after_seconds=0):
        waiting = await job_reaches(store, job.public_id, {"waiting"})
        assert (waiting.wait_for, waiting.wait_text) == ("question", "Which colour?")
        [question] = (await store.status(job.public_id)).questions
        assert question.choices == ("red", "blue")
        await store.answer(job.public_id, "blue", actor=Actor.REQUESTER, by="alice")
        done = await job_reaches(store, job.public_id, {"succeeded"})
    assert done.result is not None
    assert done.result["answer"] == "You chose."
    assert len(server.requests) == 2  # the model is never called twice for one reply
    assert tool_answers(server.requests[1]) == ["The requester answered: blue"]
    assert any(t["function"]["name"] == "ask_user" for t in server.requests[0]["tools"])


async def test_follow_ups_join_the_conversation_once_each_in_order_across_a_worker_stop(
    server: ChatServer, store: JobStore, registry: Registry, db_dsn: str
) -> None:
    """Three follow-ups: one before the first model call, one while the agent waits for its
    first answer, one after the worker stopped (the agent parked) and before a new worker
    resumes it. Each reaches the model once, before the next call, in order."""
    job, _ = await store.submit("agent", {"prompt": "[script:steer] go"}, requester="alice")
    await store.tell(job.public_id, "first", actor=Actor.REQUESTER, by="alice")
    async with running_worker(store, registry, db_dsn, park_after_seconds=30):
        await poll(lambda: store.status(job.public_id), until=lambda s: len(s.questions) == 1)
        await store.tell(job.public_id, "second", actor=Actor.REQUESTER, by="alice")
        await store.answer(job.public_id, "yes", actor=Actor.REQUESTER, by="alice")
        await poll(lambda: store.status(job.public_id), until=lambda s: len(s.questions) == 2)
    assert (await store.get(job.public_id)).state.value == "waiting"  # parked by the stop
    await store.tell(job.public_id, "third", actor=Actor.REQUESTER, by="alice")
    await store.answer(job.public_id, "yes", actor=Actor.REQUESTER, by="alice")
    async with running_worker(store, registry, db_dsn):
        done = await job_reaches(store, job.public_id, {"succeeded"})
    assert done.result is not None
    assert done.result["answer"] == "finished"
    said = [
        [m["content"] for m in r["messages"] if m["role"] == "user"][1:] for r in server.requests
    ]
    assert said == [
        ["[follow-up from the requester] first"],
        ["[follow-up from the requester] first", "[follow-up from the requester] second"],
        [
            "[follow-up from the requester] first",
            "[follow-up from the requester] second",
            "[follow-up from the requester] third",
        ],
    ]


@pytest.mark.parametrize("decision", ["Approve", "Deny"])
async def test_a_command_marked_approve_runs_only_once_approved(
    server: ChatServer,
    store: JobStore,
    registry: Registry,
    db_dsn: str,
    tmp_path: Path,
    decision: str,
) -> None:
    marks = tmp_path / "marks"
    job, _ = await store.submit("agent", {"prompt": "[script:approve] mark"}, requester="alice")
    async with running_worker(store, registry, db_dsn, park_after_seconds=0):
        waiting = await job_reaches(store, job.public_id, {"waiting"})
        assert waiting.wait_text == f"Run `sh -c 'echo ran >> \"$1\"' mark {marks}`?"
        assert not marks.exists()
        await store.answer(job.public_id, decision, actor=Actor.REQUESTER, by="alice")
        done = await job_reaches(store, job.public_id, {"succeeded"})
    [answer] = tool_answers(server.requests[1])
    if decision == "Approve":
        assert marks.read_text() == "ran\n"
        assert answer.startswith("exit code 0")
    else:
        assert not marks.exists()
        assert answer.startswith("error: not approved: alice denied running `sh -c")
    assert done.result is not None
    assert done.result["answer"] == "marked"
