"""The bot against Discord's documented mention and option rules, as the emulator enforces
them: a notice pings exactly its requester; user text with @everyone, @here or a role mention
pings nobody in any bot message."""

from __future__ import annotations

from bot.client import ErrandBot
from jobs.runtime.worker import Worker
from tests.support.polling import poll

from .conftest import Errand


async def test_a_notice_mentions_exactly_its_requester(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    bob = errand.emu.create_user("bob")
    errand.emu.add_member(errand.world.guild, bob)
    _handle, job_id = await errand.summon(f"tell <@{bob.id}> when done")
    msg = await errand.wait_progress_state(job_id, "succeeded")
    notices = await poll(lambda: errand.notices(msg.channel_id))
    assert notices[0].mention_ids == [errand.world.alice.id]
    assert notices[0].mention_role_ids == []
    assert notices[0].mention_everyone is False


async def test_everyone_here_and_role_mentions_in_a_task_ping_nobody(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    emu = errand.emu
    role = emu.create_role(errand.world.guild, "oncall")
    role.mentionable = True
    _handle, job_id = await errand.summon(f"@everyone @here <@&{role.id}> deploy")
    msg = await errand.wait_progress_state(job_id, "succeeded")
    await poll(lambda: errand.notices(msg.channel_id))
    bot_id = emu.bot_user.id
    channels = [errand.world.channel.id, msg.channel_id]
    bot_messages = [m for c in channels for m in emu.history(c) if m.author_id == bot_id]
    assert bot_messages
    for message in bot_messages:
        assert message.mention_everyone is False, message.content
        assert message.mention_role_ids == [], message.content
        assert set(message.mention_ids) <= {errand.world.alice.id}, message.content
