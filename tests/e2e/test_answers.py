"""The /summon answer is a live view of its job: edited through the interaction's token on each
state change (not counted against the bot's global limit), and settled with the bot's token
when the token is gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import tests.support.kinds  # noqa: F401  (registers one_shot)
from discord_emulator.testing import running_bot
from jobs.runtime.worker import Worker
from tests.support.polling import poll
from tests.support.runtime import running_worker

from .conftest import Errand


async def test_the_answer_follows_the_job_through_its_interaction_token(
    errand: Errand, bot: object, worker: Worker
) -> None:
    handle = await errand.emu.invoke_slash(
        errand.world.alice,
        errand.world.channel,
        "summon",
        {"task": "count", "params": "steps=2 step_seconds=0.3"},
    )
    answer = await handle.wait_original(timeout=10)
    assert "is queued" in answer.content
    job_id = answer.content.split("`")[1]
    await poll(lambda: "**succeeded**" in errand.emu.message(answer.id).content, within=20)
    shown = [v.content for v in errand.emu.message(answer.id).versions]
    assert any("is running" in c for c in shown), shown
    assert "**succeeded**" in shown[-1]
    edits = errand.emu.request_log(path_contains="/messages/@original")
    assert edits, "the answer was not edited through the interaction webhook"
    assert all(r.method == "PATCH" and r.path.startswith("/api/v10/webhooks/") for r in edits)
    # nothing edited the answer with the bot's token
    assert not [
        r
        for r in errand.emu.request_log(path_contains=f"/messages/{answer.id}")
        if r.method == "PATCH"
    ]
    assert (await errand.job(job_id)).state.value == "succeeded"


async def test_an_answer_edit_discord_never_answered_is_made_again_through_the_token(
    errand: Errand, bot: object, worker: Worker, capsys: pytest.CaptureFixture[str]
) -> None:
    """The connection drops under the answer's first edit (no answer from Discord): the bot
    logs it, the answer stays followed, and it still shows every state through the
    interaction's token, with no bot-token edit. (A 5xx reaches the same handler only after
    discord.py's webhook adapter has tried 5 times over about 16 s.)"""
    errand.emu.faults.disconnect_next(1, path_contains="/messages/@original", method="PATCH")
    handle, _ = await errand.summon("count", params="steps=2 step_seconds=0.5")
    answer = await handle.wait_original()
    await poll(lambda: "**succeeded**" in errand.emu.message(answer.id).content, within=20)
    edits = errand.emu.request_log(path_contains="/messages/@original")
    assert edits[0].method == "PATCH"
    assert edits[0].status == 0  # dropped
    assert edits[-1].status == 200
    [failed] = [ln for ln in capsys.readouterr().out.splitlines() if "answer.edit_failed" in ln]
    assert "ServerDisconnectedError" in failed
    assert not [
        r
        for r in errand.emu.request_log(path_contains=f"/messages/{answer.id}")
        if r.method == "PATCH"
    ]


async def test_a_restarted_bot_settles_the_answer_with_its_own_token(
    errand: Errand, worker: Worker
) -> None:
    first = errand.new_bot()
    async with running_bot(errand.emu, first):
        handle = await errand.emu.invoke_slash(
            errand.world.alice,
            errand.world.channel,
            "summon",
            {"task": "long", "params": "steps=2 step_seconds=0.5"},
        )
        answer = await handle.wait_original(timeout=10)
        job_id = answer.content.split("`")[1]
    # The bot that holds the interaction token is gone; the job ends without it.
    await poll(lambda: _state(errand, job_id, "succeeded"), within=20)
    async with running_bot(errand.emu, errand.new_bot()):
        await poll(lambda: "**succeeded**" in errand.emu.message(answer.id).content, within=20)
    bot_edits = [
        r
        for r in errand.emu.request_log(path_contains=f"/messages/{answer.id}")
        if r.method == "PATCH"
    ]
    assert len(bot_edits) == 1  # one terminal edit with the bot's token, no more
    assert await _answer_state(errand, job_id) == "succeeded"


async def test_a_bot_stopped_while_its_answer_edit_is_in_flight_records_the_edit(
    errand: Errand, worker: Worker
) -> None:
    """A deploy's SIGTERM lands while Discord is answering the last edit through the
    interaction token: the bot waits for it and records it, so no one edits it again."""
    bot = errand.new_bot()
    async with running_bot(errand.emu, bot):
        handle, job_id = await errand.summon("long", params="steps=4 step_seconds=0.5")
        answer = await handle.wait_original()
        await poll(lambda: "is running" in errand.emu.message(answer.id).content, within=20)
        hold = errand.emu.faults.hold_next(path_contains="/messages/@original", method="PATCH")
        assert "is running" in errand.emu.message(answer.id).content  # the end is still to come
        await asyncio.wait_for(hold.arrived.wait(), 20)
        assert "**succeeded**" in errand.emu.message(answer.id).content
        closing = asyncio.create_task(bot.close())
        await asyncio.sleep(0.3)
        assert not closing.done()  # the stop waits for the edit under way
        hold.release()
        await asyncio.wait_for(closing, 10)
        assert await _answer_state(errand, job_id) == "succeeded"
    async with running_bot(errand.emu, errand.new_bot()):
        await asyncio.sleep(0.5)  # a few delivery rounds: the answer is settled already
    assert not [
        r
        for r in errand.emu.request_log(path_contains=f"/messages/{answer.id}")
        if r.method == "PATCH"
    ]


async def _answer_state(errand: Errand, job_id: str) -> str | None:
    return await errand.pool.fetchval(  # type: ignore[no-any-return]
        "SELECT b.answer_state::text FROM discord_binding b JOIN job j ON j.id = b.job_id "
        "WHERE j.public_id = $1",
        job_id,
    )


async def _state(errand: Errand, job_id: str, state: str) -> bool:
    return (await errand.job(job_id)).state.value == state


async def test_an_answer_whose_job_ended_unknown_while_no_bot_held_its_token_says_so(
    errand: Errand, tmp_path: Path
) -> None:
    """A one-attempt job stopped mid-run by a worker's shutdown ends ``unknown``; the bot that
    held the answer's token is gone by then, and its successor settles the answer."""
    async with (
        running_worker(errand.store, errand.registry, errand.dsn, shutdown_grace_seconds=0.3),
        running_bot(errand.emu, errand.new_bot()),
    ):
        handle = await errand.emu.invoke_slash(
            errand.world.alice,
            errand.world.channel,
            "summon",
            {
                "task": "one shot",
                "kind": "one_shot",
                "params": f"log={tmp_path / 'log'} seconds=5",
            },
        )
        answer = await handle.wait_original(timeout=10)
        job_id = answer.content.split("`")[1]
        await poll(lambda: _state(errand, job_id, "running"), within=20)
    # the worker stopped mid-run: a one-attempt job without a checkpoint ends unknown
    await poll(lambda: _state(errand, job_id, "unknown"), within=20)
    async with running_bot(errand.emu, errand.new_bot()):
        await poll(lambda: "**unknown**" in errand.emu.message(answer.id).content, within=20)
