"""Notices that are never lost: restarts, a dead destination, the Cancel button after a
restart, and 100 jobs at once in one channel."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections import Counter

import asyncpg
import pytest

from bot.client import ErrandBot
from discord_emulator import patched
from discord_emulator import permissions as P
from discord_emulator.testing import running_bot
from jobs.runtime.worker import Worker
from tests.support.polling import poll

from .conftest import Errand, state_of


async def test_a_notice_written_while_the_bot_was_down_is_delivered_once_after_restart(
    errand: Errand, worker: Worker
) -> None:
    """The job ends while no bot runs; the next bot delivers the terminal edit and exactly one
    notice, and a third start delivers nothing more."""
    first = errand.new_bot()
    async with running_bot(errand.emu, first):
        errand.bot = first
        _, job_id = await errand.summon(params="steps=1 step_seconds=0.5")
        thread_id = await errand.thread_of(job_id)
    await poll(lambda: _state(errand, job_id, "succeeded"))
    assert errand.notices(thread_id) == []
    for _ in range(2):
        again = errand.new_bot()
        async with running_bot(errand.emu, again):
            await errand.wait_progress_state(job_id, "succeeded")
            await poll(lambda: errand.notices(thread_id))
            await asyncio.sleep(0.5)
    assert len(errand.notices(thread_id)) == 1
    pending = await errand.pool.fetchval("SELECT count(*) FROM outbox WHERE delivered_at IS NULL")
    assert pending == 0


async def _state(errand: Errand, job_id: str, state: str) -> bool:
    return (await errand.job(job_id)).state.value == state


async def _succeeded_rows(errand: Errand, job_id: str) -> list[asyncpg.Record]:
    return await errand.pool.fetch(
        "SELECT o.delivered_at, o.external_id FROM outbox o JOIN job j ON j.id = o.job_id"
        " WHERE j.public_id = $1 AND o.payload->>'to' = 'succeeded'",
        job_id,
    )


async def test_a_bot_stopped_while_its_notice_is_in_flight_records_it_before_it_stops(
    errand: Errand, worker: Worker
) -> None:
    """A deploy's SIGTERM lands while Discord is answering a notice: the bot waits for the
    answer and records it (delivery_drain_seconds), so the next bot sends nothing again."""
    bot = errand.new_bot()
    async with running_bot(errand.emu, bot):
        errand.bot = bot
        job_id, thread_id, hold = await errand.summon_and_hold_its_notice()
        await asyncio.wait_for(hold.arrived.wait(), 20)  # Discord has the notice; no answer yet
        closing = asyncio.create_task(bot.close())
        await asyncio.sleep(0.3)
        assert not closing.done()  # the stop waits for the round under way
        hold.release()
        await asyncio.wait_for(closing, 10)
        [notice] = errand.notices(thread_id)
        assert [
            (r["delivered_at"] is not None, r["external_id"])
            for r in await _succeeded_rows(errand, job_id)
        ] == [(True, str(notice.id))]
    async with running_bot(errand.emu, errand.new_bot()):
        await asyncio.sleep(0.5)  # a few delivery polls: nothing is due
    assert errand.notices(thread_id) == [notice]
    posts = [
        r
        for r in errand.emu.request_log(path_contains=f"/channels/{thread_id}/messages")
        if r.method == "POST"
    ]
    assert len(posts) == 2  # the progress message and the notice, each sent once


async def test_the_stop_waits_for_delivery_no_longer_than_its_drain_time(
    errand: Errand, worker: Worker
) -> None:
    """A notice Discord does not answer within delivery_drain_seconds is cut off; its row stays
    due, and the next bot sends it again under the same nonce: still one notice in the thread."""
    bot = errand.new_bot(delivery_drain_seconds=0.3)
    async with running_bot(errand.emu, bot):
        errand.bot = bot
        job_id, thread_id, hold = await errand.summon_and_hold_its_notice()
        await asyncio.wait_for(hold.arrived.wait(), 20)
        started = time.monotonic()
        await asyncio.wait_for(bot.close(), 10)
        stopped_after = time.monotonic() - started
        hold.release()  # the answer comes, to a bot that has stopped listening
        assert len(errand.notices(thread_id)) == 1
        assert [r["delivered_at"] for r in await _succeeded_rows(errand, job_id)] == [None]
    assert 0.3 <= stopped_after < 5.0, stopped_after
    async with running_bot(errand.emu, errand.new_bot()):
        rows = await poll(lambda: _delivered(errand, job_id), within=20)
    [notice] = errand.notices(thread_id)
    assert [r["external_id"] for r in rows] == [str(notice.id)]


async def test_a_stopping_bot_sends_nothing_new_and_hands_unsent_rows_back_at_once(
    errand: Errand, worker: Worker
) -> None:
    """Rounds waiting for their turn in the bot's request queue are not drained: the stop ends
    them at once, sends nothing more, and their rows are due again now (not after the lease)."""
    bot = errand.new_bot(requests_per_second=0.2)  # one turn per 5 s: the round must queue
    async with running_bot(errand.emu, bot):
        errand.bot = bot
        _, job_id = await errand.summon(params="steps=1 step_seconds=0.1")
        await poll(lambda: _state(errand, job_id, "succeeded"))
        # The answer's own edits (its token's bucket, not the bot's queue) are done and recorded:
        # what the stop finds is delivery's rounds alone.
        await poll(
            lambda: errand.pool.fetchval(
                "SELECT b.answer_state = 'succeeded' FROM discord_binding b"
                " JOIN job j ON j.id = b.job_id WHERE j.public_id = $1",
                job_id,
            )
        )

        async def leased() -> bool:
            return bool(
                await errand.pool.fetchval(
                    "SELECT count(*) FROM outbox o JOIN job j ON j.id = o.job_id"
                    " WHERE j.public_id = $1 AND o.lease_owner IS NOT NULL",
                    job_id,
                )
            )

        await poll(leased)  # the round has claimed the job's rows and waits for turns
        sent = len(errand.emu.requests)
        started = time.monotonic()
        await asyncio.wait_for(bot.close(), 10)
        took = time.monotonic() - started
        rows = await errand.pool.fetch(
            "SELECT o.delivered_at, o.lease_owner, o.available_at <= now() AS due, o.attempts"
            " FROM outbox o JOIN job j ON j.id = o.job_id WHERE j.public_id = $1",
            job_id,
        )
    assert took < 2.0, took  # not the 5 s drain: nothing of it was in flight
    unsent = [r for r in rows if r["delivered_at"] is None]
    assert unsent, rows  # the terminal notice at least was still waiting for its turn
    assert all(r["lease_owner"] is None and r["due"] and r["attempts"] == 0 for r in unsent), rows
    await asyncio.sleep(0.3)
    after = list(errand.emu.requests)[sent:]
    assert not [r for r in after if not r.path.startswith("/api/v10/interactions/")], after


async def _delivered(errand: Errand, job_id: str) -> list[asyncpg.Record]:
    rows = await _succeeded_rows(errand, job_id)
    return rows if rows and all(r["delivered_at"] for r in rows) else []


async def test_the_cancel_button_works_after_a_restart(errand: Errand, worker: Worker) -> None:
    """A button posted by one bot process is handled by the next one (DynamicItem)."""
    first = errand.new_bot()
    async with running_bot(errand.emu, first):
        errand.bot = first
        _, job_id = await errand.summon(params="steps=1 step_seconds=60")
        msg = await errand.wait_progress_state(job_id, "running")
    second = errand.new_bot()
    async with running_bot(errand.emu, second):
        click = await errand.emu.click(
            errand.world.alice, errand.emu.message(msg.id), f"errand:cancel:{job_id}"
        )
        answer = await click.wait_original()
        assert answer.ephemeral
        assert answer.content.startswith(f"Asked job `{job_id}` to stop")
        await errand.wait_progress_state(job_id, "cancelled")
        assert errand.emu.message(msg.id).components == []
    assert (await errand.job(job_id)).state.value == "cancelled"


async def test_an_undeliverable_notice_is_retried_then_dead_lettered_without_blocking_others(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    """The bot loses Send Messages in Threads in one channel: that job's notice is retried with
    backoff, dead-lettered with its reason (shown by /job status), while a job in another
    channel is delivered normally."""
    emu, world = errand.emu, errand.world
    other = emu.create_channel(world.guild, "other")
    _, blocked = await errand.summon(params="steps=1 step_seconds=0.3")
    await errand.wait_progress_state(blocked, "running")
    emu.set_overwrite(world.channel, emu.bot_user, deny=P.SEND_MESSAGES_IN_THREADS)
    _, fine = await errand.summon(channel=other, params="steps=1 step_seconds=0.3")
    await errand.wait_progress_state(fine, "succeeded")
    fine_thread = await errand.thread_of(fine)
    assert len(await poll(lambda: errand.notices(fine_thread))) == 1

    row = await poll(
        lambda: errand.pool.fetchrow(
            "SELECT o.* FROM outbox o JOIN job j ON j.id = o.job_id WHERE j.public_id = $1 "
            "AND o.payload->>'to' = 'succeeded' AND o.dead_at IS NOT NULL",
            blocked,
        )
    )
    assert row["attempts"] == 3
    assert "403" in row["last_error"]
    assert "50013" in row["last_error"]
    assert errand.notices(await errand.thread_of(blocked)) == []
    handle = await emu.invoke_slash(world.alice, world.channel, "job status", {"id": blocked})
    page = (await handle.wait_original()).content
    assert "Notice (succeeded) not delivered: 403 50013" in page

    # The operator sees it in the CLI, fixes the permission and retries: delivered once.
    listed = json.loads(await _errand(errand, "outbox", "list", "--job", blocked, "--json"))
    [dead] = [n for n in listed["notices"] if n["dead_at"]]
    assert "403" in dead["last_error"]
    emu.set_overwrite(world.channel, emu.bot_user, deny=0)
    await _errand(errand, "outbox", "retry", str(dead["id"]))
    thread = await errand.thread_of(blocked)
    [notice] = await poll(lambda: errand.notices(thread))
    assert "**succeeded**" in notice.content


@pytest.mark.parametrize("fault", [503, 0], ids=["503", "connection dropped"])
async def test_discord_5xx_and_dropped_connections_are_retried_uncounted_and_never_dead_letter(
    errand: Errand, worker: Worker, fault: int
) -> None:
    """With one delivery attempt allowed, Discord answers the job's notice with 503 twice (or
    drops the connection twice without an answer: aiohttp's ServerDisconnectedError, not an
    OSError): each time the notice is handed back uncounted (Discord's trouble or the network's,
    not the destination's), so it is delivered once, with one counted attempt, and never
    dead-lettered (docs/runbook.md, "Discord is down or refuses the bot")."""
    bot = errand.new_bot(delivery_max_attempts=1)
    async with running_bot(errand.emu, bot):
        errand.bot = bot
        _, job_id = await errand.summon(params="steps=1 step_seconds=0.5")
        await errand.wait_progress_state(job_id, "running")
        thread_id = await errand.thread_of(job_id)
        where = {"path_contains": f"/channels/{thread_id}/messages", "method": "POST"}
        if fault:
            errand.emu.faults.fail_next(fault, 2, **where)
        else:
            errand.emu.faults.disconnect_next(2, **where)
        [notice] = await poll(lambda: errand.notices(thread_id), within=30)
        assert "**succeeded**" in notice.content

        async def recorded() -> list[asyncpg.Record]:
            rows = await errand.pool.fetch(
                "SELECT o.attempts, o.dead_at, o.delivered_at, o.external_id FROM outbox o JOIN"
                " job j ON j.id = o.job_id WHERE j.public_id = $1"
                " AND o.payload->>'to' = 'succeeded'",
                job_id,
            )
            return rows if all(r["delivered_at"] for r in rows) else []

        # The message reaches Discord before the bot records it: wait for the record before
        # stopping the bot (which would leave it to the next one, and the nonce).
        rows = await poll(recorded, within=10)
    failed = [t for t in errand.emu.faults.triggered if t[2] == fault]
    assert len(failed) == 2
    assert [(r["attempts"], r["dead_at"], r["external_id"]) for r in rows] == [
        (1, None, str(notice.id))
    ]


async def _errand(errand: Errand, *args: str) -> str:
    """Run the errand CLI on the test database; its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ERRAND_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from bot.cli import main; main()",
        *args,
        env=env | {"DATABASE_URL": errand.dsn},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_a_hundred_jobs_in_one_channel_all_end_terminal_without_429_storms(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    """100 concurrent /summon: every answer comes fast, every progress message ends in its
    terminal state, and no route gets more than one 429."""
    started = time.perf_counter()

    async def one(n: int) -> tuple[str, float]:
        t0 = time.perf_counter()
        _, job_id = await errand.summon(f"job {n}", params="steps=2 step_seconds=0.2")
        return job_id, time.perf_counter() - t0

    results = await asyncio.gather(*(one(n) for n in range(100)))
    acks = sorted(t for _, t in results)
    assert acks[98] < 3.0, f"p99 ack {acks[98]:.2f}s"
    ids = [job_id for job_id, _ in results]
    assert len(set(ids)) == 100

    async def all_terminal() -> bool:
        done = 0
        for job_id in ids:
            mid = await errand.pool.fetchval(
                "SELECT b.progress_message_id::bigint FROM discord_binding b JOIN job j "
                "ON j.id = b.job_id WHERE j.public_id = $1",
                job_id,
            )
            if mid and state_of(errand.emu.message(mid).content) == "succeeded":
                done += 1
        return done == 100

    await poll(all_terminal, within=60, every=0.2)
    assert time.perf_counter() - started < 60
    limited = Counter(r.route or r.path for r in errand.emu.request_log(status=429))
    assert all(n <= 1 for n in limited.values()), limited
    notices = await poll(lambda: _notice_count(errand, ids), within=20)
    assert notices == 100
    for job_id in ids:
        msg = await errand.progress_message(job_id)
        shown = [state_of(v.content) for v in msg.versions]
        first_end = shown.index("succeeded")
        assert shown[first_end:] == ["succeeded"], shown


async def _notice_count(errand: Errand, ids: list[str]) -> int | None:
    count = await errand.pool.fetchval(
        "SELECT count(*) FROM outbox o JOIN job j ON j.id = o.job_id "
        "WHERE j.public_id = ANY($1) AND o.payload->>'to' = 'succeeded' "
        "AND o.delivered_at IS NOT NULL",
        ids,
    )
    return int(count) if count == 100 else None


async def test_two_bot_processes_delivering_at_once_never_duplicate_or_go_back(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    """A rolling restart: a second bot delivers from the same database while the first still
    runs. Each notice is sent once, and no progress message shows a state after its terminal
    one (one process renders a job at a time)."""
    other = errand.new_bot()
    assert errand.emu.application is not None
    with patched(errand.emu):
        await other.login(errand.emu.application.token)  # runs setup_hook: delivery starts
        try:
            ids = [
                (await errand.summon(f"job {n}", params="steps=2 step_seconds=0.2"))[1]
                for n in range(10)
            ]
            for job_id in ids:
                await errand.wait_progress_state(job_id, "succeeded")
            counts = await poll(lambda: _notice_count_of(errand, ids, 10))
        finally:
            await other.close()
    assert counts == 10
    # Both processes race for every job; whichever took its render lease sent its notice.
    assert bot.delivery.stats["notices"] + other.delivery.stats["notices"] == 10
    for job_id in ids:
        msg = await errand.progress_message(job_id)
        shown = [state_of(v.content) for v in msg.versions]
        assert shown[shown.index("succeeded") :] == ["succeeded"], shown
        assert len(errand.notices(msg.channel_id)) == 1


async def _notice_count_of(errand: Errand, ids: list[str], want: int) -> int | None:
    count = await errand.pool.fetchval(
        "SELECT count(*) FROM outbox o JOIN job j ON j.id = o.job_id "
        "WHERE j.public_id = ANY($1) AND o.payload->>'to' = 'succeeded' "
        "AND o.delivered_at IS NOT NULL",
        ids,
    )
    return int(count) if count == want else None


async def test_a_notice_still_rate_limited_after_discordpy_retries_is_never_dead_lettered(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    """A 429 storm on notices longer than discord.py's own retries (and than the bot's
    delivery attempts, 3 here): Discord says "later", not "no", so the notice is handed back
    without counting, never dead-lettered, and delivered once the storm ends."""
    _, job_id = await errand.summon(params="steps=2 step_seconds=1")
    thread = await errand.thread_of(job_id)
    await errand.wait_progress_state(job_id, "running")
    errand.emu.faults.ratelimit_next(
        40, path_contains=f"/channels/{thread}/messages", method="POST"
    )
    [notice] = await poll(lambda: errand.notices(thread), within=60)
    assert "**succeeded**" in notice.content

    async def settled() -> asyncpg.Record | None:
        # The notice shows in the thread a moment before delivery records it: wait for the
        # row to be delivered or dead, then check which.
        return await errand.pool.fetchrow(  # type: ignore[no-any-return]
            "SELECT o.* FROM outbox o JOIN job j ON j.id = o.job_id WHERE j.public_id = $1 "
            "AND o.payload->>'to' = 'succeeded' "
            "AND (o.delivered_at IS NOT NULL OR o.dead_at IS NOT NULL)",
            job_id,
        )

    row = await poll(settled)
    assert row["dead_at"] is None
    assert row["external_id"] == str(notice.id)
    limited = errand.emu.request_log(path_contains=f"/channels/{thread}/messages", status=429)
    assert len(limited) == 40
