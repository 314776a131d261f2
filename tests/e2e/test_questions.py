"""A job's question on Discord, with the real bot, a real ``errand worker`` process and
PostgreSQL against the emulator: the question's message and its buttons, select menu and modal;
who may answer; one answer for two clicks; closed questions; timeouts; and the progress message
while it waits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.client import ErrandBot
from discord_emulator import Message, User
from discord_emulator import permissions as P
from tests.support.polling import poll
from tests.support.runtime import job_reaches
from tests.support.worker_process import start_worker, stop_worker

from .conftest import Errand

ASK = 'steps=2 step_seconds=0.05 ask="Which colour?" choices=red,green'


@pytest.fixture
async def worker(errand: Errand, tmp_path: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """A real ``errand worker`` process (short leases, as the e2e in-process worker's)."""
    proc = await start_worker(errand.dsn, tmp_path)
    try:
        yield proc
    finally:
        await stop_worker(proc)


@pytest.fixture
async def parking_worker(
    errand: Errand, tmp_path: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """The same, parking a job as soon as it waits (no 30 s in its worker first)."""
    proc = await start_worker(errand.dsn, tmp_path, ERRAND_WORKER_PARK_AFTER_SECONDS="0")
    try:
        yield proc
    finally:
        await stop_worker(proc)


def custom_ids(message: Message) -> list[str]:
    return [c["custom_id"] for row in message.components for c in row.get("components", [])]


async def question_of(errand: Errand, job_id: str) -> Message:
    """The job's question message, once posted."""
    thread = await errand.thread_of(job_id)

    def posted() -> Message | None:
        found = [m for m in errand.emu.history(thread) if "asks:" in m.content and not m.deleted]
        return found[0] if found else None

    return await errand.emu.wait_until(posted, 10)


async def click(errand: Errand, user: User, message: Message, custom_id: str, **kw: Any) -> Any:
    handle = await errand.emu.click(user, message, custom_id, **kw)
    return await handle.wait_response()


def member(errand: Errand, name: str, *, moderator: bool = False) -> User:
    user = errand.emu.create_user(name)
    errand.emu.add_member(errand.world.guild, user)
    if moderator:
        errand.emu.set_overwrite(errand.world.channel, user, allow=P.MANAGE_THREADS)
    return user


async def test_a_click_by_the_requester_answers_and_another_users_click_is_refused(
    errand: Errand, bot: ErrandBot, worker: asyncio.subprocess.Process
) -> None:
    alice, bob = errand.world.alice, member(errand, "bob")
    _, job_id = await errand.summon(params=ASK)
    question = await question_of(errand, job_id)
    assert question.content.startswith(f"<@{alice.id}> 💬 Job `{job_id}` asks: **Which colour?**")
    assert alice.id in question.mention_ids  # the one message that pings the requester
    red, green = custom_ids(question)
    assert red.startswith(f"errand:q:{job_id}:")

    refused = await click(errand, bob, question, green)
    said = await refused.wait_original()
    assert said.ephemeral
    assert said.content == f"Only <@{alice.id}> or an operator can answer job `{job_id}`."
    assert (await errand.store.status(job_id)).messages == []

    answered = await click(errand, alice, question, green)
    assert answered.response_type == 7  # the question's message itself, edited at once
    shown = errand.emu.message(question.id)
    assert f"✅ Answered by <@{alice.id}>: **green**" in shown.content
    assert shown.components == []
    done = await job_reaches(errand.store, job_id, {"succeeded"})
    assert done.result == {
        "steps": 2,
        "attempt": 1,
        "answer": "green",
        "answered_by": f"discord:{alice.id}",
    }
    status = await errand.store.status(job_id)
    assert f"answered by discord:{alice.id}: green" in [e.reason for e in status.events]
    final = await errand.wait_progress_state(job_id, "succeeded")
    assert "green" in errand.emu.message(final.id).content


async def test_an_answer_in_ones_own_words_goes_through_the_modal(
    errand: Errand, bot: ErrandBot, worker: asyncio.subprocess.Process
) -> None:
    alice = errand.world.alice
    _, job_id = await errand.summon(params='steps=1 step_seconds=0 ask="What name?"')
    question = await question_of(errand, job_id)
    [answer_button] = custom_ids(question)
    assert answer_button.startswith(f"errand:qt:{job_id}:")
    opened = await click(errand, alice, question, answer_button)
    assert opened.response_type == 9  # a modal
    submitted = await errand.emu.submit_modal(alice, opened, {"answer": "Ada Lovelace"})
    await submitted.wait_response()
    assert "**Ada Lovelace**" in errand.emu.message(question.id).content
    done = await job_reaches(errand.store, job_id, {"succeeded"})
    assert done.result is not None
    assert done.result["answer"] == "Ada Lovelace"


async def test_many_choices_make_a_select_menu(
    errand: Errand, bot: ErrandBot, worker: asyncio.subprocess.Process
) -> None:
    colours = "red,orange,yellow,green,blue,indigo,violet"
    _, job_id = await errand.summon(params=f'steps=1 step_seconds=0 ask="Pick" choices={colours}')
    question = await question_of(errand, job_id)
    [menu] = custom_ids(question)
    assert menu.startswith(f"errand:qs:{job_id}:")
    picked = await click(errand, errand.world.alice, question, menu, values=["4"])
    assert picked.response_type == 7
    done = await job_reaches(errand.store, job_id, {"succeeded"})
    assert done.result is not None
    assert done.result["answer"] == "blue"


async def test_two_clicks_at_once_give_one_answer(
    errand: Errand, bot: ErrandBot, worker: asyncio.subprocess.Process
) -> None:
    """The requester and a moderator click at the same moment: one answer; the other click is
    told, ephemerally, who answered first."""
    alice, carol = errand.world.alice, member(errand, "carol", moderator=True)
    _, job_id = await errand.summon(params=ASK)
    question = await question_of(errand, job_id)
    red, green = custom_ids(question)
    first, second = await asyncio.gather(
        errand.emu.click(alice, question, red), errand.emu.click(carol, question, green)
    )
    await asyncio.gather(first.wait_response(), second.wait_response())
    types = sorted([first.response_type, second.response_type])
    assert types == [4, 7]
    loser = first if first.response_type == 4 else second
    said = await loser.wait_original()
    assert said.ephemeral
    assert said.content.startswith("Already answered by <@")
    status = await errand.store.status(job_id)
    assert [m.refused is None for m in status.messages].count(True) == 1
    assert len(status.messages) == 2


async def test_a_click_after_a_cancel_is_told_the_question_is_closed(
    errand: Errand, bot: ErrandBot, worker: asyncio.subprocess.Process
) -> None:
    """The click comes before Discord shows the question closed (its edit fails meanwhile)."""
    alice = errand.world.alice
    _, job_id = await errand.summon(params=ASK)
    question = await question_of(errand, job_id)
    errand.emu.faults.fail_next(
        502, count=1000, path_contains=f"/messages/{question.id}", method="PATCH"
    )
    cancelled = await errand.emu.invoke_slash(
        alice, errand.world.channel, "job cancel", {"id": job_id}
    )
    await cancelled.wait_original()
    await job_reaches(errand.store, job_id, {"cancelled"})
    late = await click(errand, alice, question, custom_ids(question)[0])
    said = await late.wait_original()
    assert said.ephemeral
    assert said.content.startswith("This question is closed (")
    errand.emu.faults.clear()
    shown = await errand.emu.wait_until(
        lambda: (
            errand.emu.message(question.id)
            if "⛔ Closed" in errand.emu.message(question.id).content
            else None
        ),
        15,
    )
    assert shown.components == []


async def test_while_it_waits_the_progress_message_and_status_say_for_whom_and_what(
    errand: Errand, bot: ErrandBot, parking_worker: asyncio.subprocess.Process
) -> None:
    alice = errand.world.alice
    _, job_id = await errand.summon(params=ASK)
    await errand.wait_progress_state(job_id, "waiting")
    progress = await errand.progress_message(job_id)
    content = errand.emu.message(progress.id).content
    assert f"Waiting for <@{alice.id}>: Which colour? · since <t:" in content
    status = await errand.emu.invoke_slash(
        alice, errand.world.channel, "job status", {"id": job_id}
    )
    page = await status.wait_original()
    assert f"Waiting for <@{alice.id}>: Which colour?" in page.content
    question = await question_of(errand, job_id)
    await click(errand, alice, question, custom_ids(question)[0])
    await errand.wait_progress_state(job_id, "succeeded")


async def test_a_timeout_takes_the_default_or_fails_the_job_and_closes_the_question(
    errand: Errand, bot: ErrandBot, worker: asyncio.subprocess.Process
) -> None:
    _, with_default = await errand.summon(params=f"{ASK} timeout=0.3 default=grey")
    _, without = await errand.summon(params=f"{ASK} timeout=0.3")
    done = await job_reaches(errand.store, with_default, {"succeeded"})
    assert done.result is not None
    assert done.result["answer"] == "grey"
    failed = await job_reaches(errand.store, without, {"failed"})
    assert failed.reason == "no answer to question 'ask' in time"
    for job_id in (with_default, without):
        question = await question_of(errand, job_id)
        await poll(
            lambda q=question: errand.emu.message(q.id),
            until=lambda m: "⌛ Closed: no answer in time." in m.content and not m.components,
        )
