"""Follow-ups on Discord: the requester mentions the bot in the job's thread, or types
``/job tell``; the message reaches the job's mailbox once, acknowledged quietly; anyone else's
is not delivered. The bot has no message-content intent: a mention carries its content anyway."""

from __future__ import annotations

from bot.client import ErrandBot
from jobs.runtime.worker import Worker
from tests.support.polling import poll

from .conftest import Errand


async def test_a_mention_from_the_requester_reaches_the_mailbox_and_others_do_not(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    emu, alice = errand.emu, errand.world.alice
    assert bot.intents.message_content is False
    assert bot.intents.guild_messages is True
    bob = emu.create_user("bob")
    emu.add_member(errand.world.guild, bob)
    _, job_id = await errand.summon(params="steps=1 step_seconds=30")
    thread = await errand.thread_of(job_id)
    me = f"<@{emu.bot_user.id}>"

    told = emu.send_message(alice, thread, f"{me} please use the blue one")
    plain = emu.send_message(alice, thread, "no mention: just talking")
    other = emu.send_message(bob, thread, f"{me} I am not the requester")

    await poll(lambda: emu.message(told.id), until=lambda m: "📨" in m.reactions)
    status = await errand.store.status(job_id)
    assert [(m.seq, m.sender, m.text, m.actor.value) for m in status.messages] == [
        (1, f"discord:{alice.id}", "please use the blue one", "requester")
    ]
    assert emu.message(told.id).reactions["📨"] == [emu.bot_user.id]
    assert emu.message(plain.id).reactions == {}
    assert emu.message(other.id).reactions == {}

    inside = await emu.invoke_slash(alice, thread, "job tell", {"text": "and hurry"})
    said = await inside.wait_original()
    assert said.ephemeral
    assert said.content.startswith(f"Told job `{job_id}` (message 2)")
    outside = await emu.invoke_slash(
        alice, errand.world.channel, "job tell", {"text": "thanks", "id": job_id}
    )
    assert (await outside.wait_original()).content.startswith(f"Told job `{job_id}` (message 3)")
    refused = await emu.invoke_slash(bob, thread, "job tell", {"text": "me too"})
    assert (await refused.wait_original()).content == (
        f"Only the requester or an operator can tell job `{job_id}` something."
    )
    texts = [m.text for m in (await errand.store.status(job_id)).messages]
    assert texts == ["please use the blue one", "and hurry", "thanks"]


async def test_a_follow_up_to_an_ended_job_is_refused_quietly(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    emu, alice = errand.emu, errand.world.alice
    _, job_id = await errand.summon(params="steps=1 step_seconds=0")
    await errand.wait_progress_state(job_id, "succeeded")
    thread = await errand.thread_of(job_id)
    late = emu.send_message(alice, thread, f"<@{emu.bot_user.id}> one more thing")
    await poll(lambda: emu.message(late.id), until=lambda m: "📭" in m.reactions)
    told = await emu.invoke_slash(alice, thread, "job tell", {"text": "one more thing"})
    assert (await told.wait_original()).content == (
        f"job {job_id} already succeeded: nobody would read it"
    )
    assert (await errand.store.status(job_id)).messages == []
