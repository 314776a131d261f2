"""The line in Discord: ``/summon … when:`` shows the start in Discord's timestamp markup and
holds the job until then (a cancel before it means it never runs); ``priority:`` is for
operators; ``/job status`` shows a queued job's place in its kind's line and the limit."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.client import ErrandBot
from discord_emulator import Emulator
from tests.e2e.conftest import Errand, state_of
from tests.support.polling import poll

STAMP = re.compile(r"<t:(\d+):R>")


async def _ask(
    errand: Errand, user: object, channel: object, command: str, options: dict[str, object]
) -> str:
    handle = await errand.emu.invoke_slash(user, channel, command, options)  # type: ignore[arg-type]
    return (await handle.wait_original()).content


async def test_summon_when_in_5_minutes_shows_discord_time_and_waits(
    errand: Errand, bot: ErrandBot
) -> None:
    before = datetime.now(UTC)
    handle, job_id = await errand.summon(when="in 5 minutes")
    answer = (await handle.wait_original()).content
    match = STAMP.search(answer)
    assert match, answer
    shown = datetime.fromtimestamp(int(match[1]), UTC)
    assert before + timedelta(minutes=5) - timedelta(seconds=2) <= shown
    assert shown <= datetime.now(UTC) + timedelta(minutes=5)
    assert "scheduled to start" in answer
    job = await errand.job(job_id)
    assert job.state.value == "queued"
    assert abs((job.run_at - shown).total_seconds()) < 1
    # The progress message says when too, in the same markup.
    message = await errand.progress_message(job_id)
    assert "Scheduled to start <t:" in message.content
    # Cancelled before its time, it never runs.
    text = await _ask(
        errand, errand.world.alice, errand.world.channel, "job cancel", {"id": job_id}
    )
    assert text == f"Cancelled job `{job_id}`."
    done = await errand.job(job_id)
    assert (done.state.value, done.attempts, done.started_at) == ("cancelled", 0, None)


async def test_when_in_a_timezone_and_bad_times_are_answered_and_change_nothing(
    errand: Errand, bot: ErrandBot
) -> None:
    _, job_id = await errand.summon(when="23:59", timezone="Pacific/Auckland")
    job = await errand.job(job_id)
    local = job.run_at.astimezone(ZoneInfo("Pacific/Auckland"))
    assert (local.hour, local.minute) == (23, 59)
    count = await errand.pool.fetchval("SELECT count(*) FROM job")
    for options, said in (
        ({"when": "yesterday"}, "bad time"),
        ({"when": "2001-01-01T00:00"}, "has already passed"),
        ({"when": "09:00", "timezone": "Mars/Olympus"}, "unknown timezone"),
        ({"timezone": "Europe/Berlin"}, "say when to start"),
    ):
        text = await _ask(
            errand, errand.world.alice, errand.world.channel, "summon", {"task": "x", **options}
        )
        assert said in text, text
    assert await errand.pool.fetchval("SELECT count(*) FROM job") == count


async def test_priority_is_for_operators(errand: Errand, emu: Emulator, bot: ErrandBot) -> None:
    text = await _ask(
        errand, errand.world.alice, errand.world.channel, "summon", {"task": "x", "priority": 5}
    )
    assert text == "Only operators can set a priority."
    assert await errand.pool.fetchval("SELECT count(*) FROM job") == 0
    operator = emu.create_user("olga")
    emu.add_member(errand.world.guild, operator)
    emu.create_role(errand.world.guild, "errand-admin", 0, members=[operator])
    bot.settings.admin_role = "errand-admin"
    _, job_id = await errand.summon(user=operator, priority=5)
    assert (await errand.job(job_id)).priority == 5


async def test_job_status_shows_the_place_and_the_limit(
    errand: Errand, bot: ErrandBot, worker: object
) -> None:
    """demo limited to 0 (held): three queued jobs; the last is 3rd in line, 0 of 0 running;
    with the limit at 1 and the first running, the last moves up to 2nd."""
    await errand.store.set_limit("demo", 0)
    ids = [(await errand.summon(params="steps=1 step_seconds=30"))[1] for _ in range(3)]
    text = await _ask(
        errand, errand.world.alice, errand.world.channel, "job status", {"id": ids[-1]}
    )
    assert state_of(text) == "queued"
    assert "3rd in line for demo · 0 of 0 running" in text
    await errand.store.set_limit("demo", 1)  # the worker (e2e) starts the first
    await poll(lambda: errand.job(ids[0]), until=lambda j: j.state.value == "running")
    text = await _ask(
        errand, errand.world.alice, errand.world.channel, "job status", {"id": ids[-1]}
    )
    assert "2nd in line for demo · 1 of 1 running" in text
