"""Discord's limits: the slower edit limit of old messages, and a bot with only the
permissions docs/discord.md asks for."""

from __future__ import annotations

import itertools

from bot.client import ErrandBot
from discord_emulator import permissions as P
from discord_emulator.ratelimit import RateLimitConfig
from discord_emulator.testing import running_bot
from tests.support.polling import poll

from .conftest import Errand, running_worker

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
    (the job reports faster than that) and none is refused with 30046."""
    emu = errand.emu
    emu.config.ratelimits = RateLimitConfig(time_scale=0.1)  # 3 edits per 0.6 s for old ones
    emu.limiter.config = emu.config.ratelimits
    bot: ErrandBot = errand.new_bot(old_message_edit_interval_seconds=0.5)
    async with running_bot(emu, bot):
        errand.bot = bot
        _, job_id = await errand.summon(params="steps=20 step_seconds=0.15")
        msg = await errand.wait_progress_state(job_id, "queued")
        # An hour on, for Discord (the emulator's clock) and for the bot (when it posted it).
        emu.advance(3700)
        await errand.pool.execute(
            "UPDATE discord_binding SET progress_posted_at = progress_posted_at"
            " - interval '61 minutes' WHERE progress_message_id = $1",
            str(msg.id),
        )
        async with running_worker(errand.store, errand.registry, errand.dsn):
            await errand.wait_progress_state(job_id, "succeeded", timeout=15)
    edits = [
        r.at
        for r in emu.request_log(path_contains=f"/messages/{msg.id}")
        if r.method == "PATCH" and r.status == 200
    ]
    paced = edits[:-1]  # the terminal edit goes at once, by design
    gaps = [b - a for a, b in itertools.pairwise(paced)]
    assert len(gaps) >= 2, edits  # several edits while running, each at the slower pace
    assert min(gaps) >= 0.45, gaps  # 0.5 s, less the clock's jitter; the job reports every 0.15 s
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
