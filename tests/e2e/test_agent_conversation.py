"""The ``agent`` kind talking back on Discord, with the real bot, a real ``errand worker`` and
the project's fake model provider: follow-ups from the thread reach the model once each, in
order, across a worker restart; a command marked ``approve`` runs only once approved, across a
SIGKILL between the approval and the run, and a denial reaches the model."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.client import ErrandBot
from tests.fakes.chat_server import ChatServer, chat_server
from tests.support.catalog import MARK_CATALOG
from tests.support.runtime import job_reaches
from tests.support.worker_process import start_worker, stop_worker

from .conftest import Errand
from .test_questions import click, custom_ids, question_of


@pytest.fixture
async def model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[ChatServer, dict[str, str]]]:
    """The fake provider, and the environment a worker process needs to reach it."""
    catalog = tmp_path / "commands.toml"
    catalog.write_text(MARK_CATALOG)
    mark = {"name": "mark", "arguments": {"path": str(tmp_path / "marks")}}
    scripts: dict[str, list[dict[str, Any]]] = {
        "steer": [
            {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Go on?"}}]},
            {"tool_calls": [{"name": "ask_user", "arguments": {"question": "And now?"}}]},
            {"content": "finished"},
        ],
        "approve": [{"tool_calls": [mark]}, {"content": "marked"}],
    }
    async with chat_server(scripts) as server:
        env = {
            "ERRAND_COMMAND_CATALOG": str(catalog),
            "ERRAND_AGENT_BASE_URL": server.url,
            "ERRAND_AGENT_MODEL": "fake-model",
            "ERRAND_AGENT_API_KEY": "sk-test",
            "ERRAND_AGENT_MAX_RETRIES": "0",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)  # the bot validates the agent's params with them
        yield server, env


async def _asked(errand: Errand, job_id: str, count: int) -> Any:
    """The job's ``count``-th question message, once posted."""
    thread = await errand.thread_of(job_id)

    def nth() -> Any:
        asked = [m for m in errand.emu.history(thread) if "asks:" in m.content]
        return asked[count - 1] if len(asked) >= count else None

    return await errand.emu.wait_until(nth, 20)


async def _answer_in_words(errand: Errand, job_id: str, words: str, count: int) -> None:
    """Answer the job's ``count``-th question through its Answer button and modal."""
    question = await _asked(errand, job_id, count)
    opened = await click(errand, errand.world.alice, question, custom_ids(question)[0])
    submitted = await errand.emu.submit_modal(errand.world.alice, opened, {"answer": words})
    await submitted.wait_response()


async def test_three_follow_ups_reach_the_agent_once_each_in_order_across_a_worker_restart(
    errand: Errand, bot: ErrandBot, model: tuple[ChatServer, dict[str, str]], tmp_path: Path
) -> None:
    server, env = model
    emu, alice = errand.emu, errand.world.alice
    me = f"<@{emu.bot_user.id}>"
    _, job_id = await errand.summon("[script:steer] go", kind="agent", params=None)
    thread = await errand.thread_of(job_id)
    first_said = emu.send_message(alice, thread, f"{me} first")
    await emu.wait_until(lambda: "📨" in emu.message(first_said.id).reactions, 10)
    proc = await start_worker(errand.dsn, tmp_path, **env, ERRAND_WORKER_PARK_AFTER_SECONDS="60")
    try:
        await question_of(errand, job_id)
        emu.send_message(alice, thread, f"{me} second")
        await _answer_in_words(errand, job_id, "yes", 1)
        await _asked(errand, job_id, 2)
        assert await stop_worker(proc, signal.SIGTERM) == 0  # it parks, waiting for the answer
        assert (await errand.job(job_id)).state.value == "waiting"
        emu.send_message(alice, thread, f"{me} third")
        await _answer_in_words(errand, job_id, "yes", 2)
        proc = await start_worker(errand.dsn, tmp_path, **env)
        done = await job_reaches(errand.store, job_id, {"succeeded"}, within=30)
    finally:
        await stop_worker(proc)
    assert done.result is not None
    assert done.result["answer"] == "finished"
    said = [
        [m["content"] for m in r["messages"] if m["role"] == "user"][1:] for r in server.requests
    ]
    first, second, third = (
        f"[follow-up from the requester] {w}" for w in ("first", "second", "third")
    )
    assert said == [[first], [first, second], [first, second, third]]
    texts = [m.text for m in (await errand.store.status(job_id)).messages if m.question_id is None]
    assert texts == ["first", "second", "third"]


async def test_an_approval_survives_a_sigkill_before_the_run_and_a_denial_reaches_the_model(
    errand: Errand, bot: ErrandBot, model: tuple[ChatServer, dict[str, str]], tmp_path: Path
) -> None:
    """Approved: the approval is recorded, the worker (its one slot busy) is SIGKILLed before
    the command runs; the next worker runs it once, without asking again. Denied: the model is
    told, and the command never ran."""
    server, env = model
    alice, marks = errand.world.alice, tmp_path / "marks"
    proc = await start_worker(
        errand.dsn,
        tmp_path,
        **env,
        ERRAND_WORKER_PARK_AFTER_SECONDS="0",
        ERRAND_WORKER_CONCURRENCY="1",
    )
    try:
        _, approved = await errand.summon("[script:approve] mark it", kind="agent", params=None)
        question = await question_of(errand, approved)
        assert "Run \\`sh -c 'echo ran" in question.content  # its words, markdown made inert
        await job_reaches(errand.store, approved, {"waiting"})
        assert not marks.exists()
        busy, _ = await errand.store.submit("sleep", {"seconds": 60}, requester="t")
        await job_reaches(errand.store, busy.public_id, {"running"})
        approve, deny = custom_ids(question)
        await click(errand, alice, question, approve)
        assert (await errand.job(approved)).state.value == "queued"  # approved, not yet run
        assert await stop_worker(proc, signal.SIGKILL) == -signal.SIGKILL
        assert not marks.exists()
        proc = await start_worker(errand.dsn, tmp_path, **env)
        done = await job_reaches(errand.store, approved, {"succeeded"}, within=40)
        assert done.result is not None
        assert done.result["answer"] == "marked"
        assert marks.read_text() == "ran\n"  # once
        assert len((await errand.store.status(approved)).questions) == 1  # asked once

        _, denied = await errand.summon("[script:approve] mark it", kind="agent", params=None)
        question = await question_of(errand, denied)
        await click(errand, alice, question, custom_ids(question)[1])
        await job_reaches(errand.store, denied, {"succeeded"}, within=30)
    finally:
        await stop_worker(proc)
    assert marks.read_text() == "ran\n"  # the denied one never ran
    told = [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool"]
    assert f"error: not approved: discord:{alice.id} denied running `sh -c" in told[-1]
    assert deny.startswith("errand:q:")
