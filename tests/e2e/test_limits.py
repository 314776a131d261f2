"""Discord's limits: the slower edit limit of old messages, and a bot with only the
permissions docs/discord.md asks for."""

from __future__ import annotations

from bot.client import ErrandBot
from discord_emulator import permissions as P
from discord_emulator.ratelimit import RateLimitConfig
from discord_emulator.testing import running_bot

from .conftest import Errand, poll, running_worker, state_of

NEEDED = (
    P.VIEW_CHANNEL
    | P.SEND_MESSAGES
    | P.SEND_MESSAGES_IN_THREADS
    | P.CREATE_PUBLIC_THREADS
    | P.READ_MESSAGE_HISTORY
)


async def test_edits_of_an_hour_old_progress_message_stay_under_the_old_message_limit(
    errand: Errand,
) -> None:
    """Once the progress message is older than an hour, edits are paced at the slower interval
    and none is refused with 30046."""
    emu = errand.emu
    emu.config.ratelimits = RateLimitConfig(time_scale=0.1)  # 3 edits per 0.6 s for old ones
    emu.limiter.config = emu.config.ratelimits
    bot: ErrandBot = errand.new_bot(old_message_edit_interval_seconds=0.25)
    async with running_bot(emu, bot):
        errand.bot = bot
        _, job_id = await errand.summon(params="steps=6 step_seconds=0.25")
        msg = await errand.wait_progress_state(job_id, "queued")
        emu.advance(3700)
        async with running_worker(errand.store, errand.registry, errand.dsn):
            await errand.wait_progress_state(job_id, "succeeded", timeout=15)
    versions = emu.message(msg.id).versions
    assert len([v for v in versions if state_of(v.content) == "running"]) >= 2
    assert [r for r in emu.request_log() if r.code == 30046] == []


async def test_a_bot_with_only_the_documented_permissions_does_everything(
    errand: Errand,
) -> None:
    """Threads, progress edits and notices need View Channel, Send Messages, Send Messages in
    Threads, Create Public Threads and Read Message History, nothing more."""
    emu = errand.emu
    guild = emu.create_guild("Minimal", bot_permissions=NEEDED)
    channel = emu.create_channel(guild, "work")
    emu.add_member(guild, errand.world.alice)
    bot = errand.new_bot()
    async with running_bot(emu, bot), running_worker(errand.store, errand.registry, errand.dsn):
        errand.bot = bot
        _, job_id = await errand.summon(channel=channel)
        msg = await errand.wait_progress_state(job_id, "succeeded")
        assert len(await poll(lambda: errand.notices(msg.channel_id))) == 1
    assert [r for r in emu.request_log() if r.status == 403] == []
