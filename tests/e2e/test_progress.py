"""The one progress message: every version of it, re-posting, archived threads, forum posts."""

from __future__ import annotations

import time
from datetime import datetime

from bot.client import ErrandBot
from jobs.runtime.worker import Worker
from tests.support.polling import poll

from .conftest import Errand, running_worker, state_of

TERMINAL = {"succeeded", "failed", "cancelled"}


def _collapse(states: list[str | None]) -> list[str | None]:
    out: list[str | None] = []
    for s in states:
        if not out or out[-1] != s:
            out.append(s)
    return out


async def test_the_edit_history_walks_every_state_and_ends_terminal(
    errand: Errand, bot: ErrandBot
) -> None:
    """Queued (no worker yet) -> running with a growing progress bar -> succeeded; no state that
    lasted longer than the coalescing window is skipped, nothing non-terminal follows the
    terminal version, and the terminal state shows within a second of the transition."""
    _, job_id = await errand.summon(params="steps=4 step_seconds=0.4")
    msg = await errand.wait_progress_state(job_id, "queued")
    assert [c["custom_id"] for row in msg.components for c in row["components"]] == [
        f"errand:cancel:{job_id}"
    ]
    async with running_worker(errand.store, errand.registry, errand.dsn):
        await errand.wait_progress_state(job_id, "succeeded")
        seen_terminal_at = time.time()
    job = await errand.job(job_id)
    assert job.finished_at is not None
    delay = seen_terminal_at - job.finished_at.timestamp()
    assert delay < 1.0, f"terminal state shown {delay:.2f}s after the transition"

    versions = errand.emu.message(msg.id).versions
    states = [state_of(v.content) for v in versions]
    assert _collapse(states) == ["queued", "running", "succeeded"]
    assert states.count("succeeded") == 1
    assert states[-1] == "succeeded"
    # Progress was shown while running: the bar grew.
    bars = [v.content for v in versions if "%" in v.content and state_of(v.content) == "running"]
    assert len(bars) >= 2
    final = versions[-1]
    assert final.components == []
    assert "Run time " in final.content
    assert " · wall time " in final.content
    assert '"steps": 4' in final.content

    # Every state that lasted longer than the edit window (+ delivery slack) was shown.
    status = await errand.store.status(job_id)
    events = [e for e in status.events if not e.ignored]
    ends: list[datetime | None] = [e.at for e in events[1:]] + [None]
    for event, end in zip(events, ends, strict=True):
        if end is not None and (end - event.at).total_seconds() > 0.5:
            assert event.to_state.value in states, event


async def test_a_deleted_progress_message_is_posted_again(errand: Errand, bot: ErrandBot) -> None:
    """Deleting the progress message does not lose the job's display: the next change posts
    a new one, which then reaches the terminal state."""
    _, job_id = await errand.summon(params="steps=1 step_seconds=0.3")
    first = await errand.wait_progress_state(job_id, "queued")
    errand.emu.actions.delete_message(errand.emu.message(first.id))
    async with running_worker(errand.store, errand.registry, errand.dsn):
        second = await poll(lambda: _reposted(errand, job_id, first.id))
        await errand.wait_progress_state(job_id, "succeeded")
    assert errand.emu.message(first.id).deleted
    assert state_of(errand.emu.message(second).content) == "succeeded"


async def _reposted(errand: Errand, job_id: str, old: int) -> int | None:
    mid = await errand.pool.fetchval(
        "SELECT b.progress_message_id::bigint FROM discord_binding b JOIN job j "
        "ON j.id = b.job_id WHERE j.public_id = $1",
        job_id,
    )
    return mid if mid != old else None


async def test_an_archived_thread_is_unarchived_to_show_the_end(
    errand: Errand, bot: ErrandBot
) -> None:
    """A moderator archives the job's thread while it waits; the terminal state still shows."""
    _, job_id = await errand.summon(params="steps=1 step_seconds=0.2")
    msg = await errand.wait_progress_state(job_id, "queued")
    errand.emu.edit_thread(msg.channel_id, archived=True)
    async with running_worker(errand.store, errand.registry, errand.dsn):
        await errand.wait_progress_state(job_id, "succeeded")
    notices = await poll(lambda: errand.notices(msg.channel_id))
    assert len(notices) == 1
    log = errand.emu.request_log(path_contains=f"/channels/{msg.channel_id}")
    # Discord refused the edit in the archived thread (50083); the bot unarchived it, then
    # edited again.
    refused = [r for r in log if r.method == "PATCH" and r.code == 50083]
    unarchived = [r for r in log if r.method == "PATCH" and r.route == "/channels/{channel_id}"]
    assert refused
    assert unarchived
    assert unarchived[0].at > refused[0].at
    assert unarchived[0].status == 200


async def test_summoned_inside_a_thread_the_job_follows_in_that_thread(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    """/summon inside an existing thread: no new thread, the progress message goes there."""
    parent = errand.world.channel
    _, first_id = await errand.summon()
    thread_id = await errand.thread_of(first_id)
    _, job_id = await errand.summon(channel=errand.emu.channel(thread_id))
    msg = await errand.wait_progress_state(job_id, "succeeded")
    assert msg.channel_id == thread_id
    assert len(errand.emu.threads(parent)) == 1


async def test_in_a_dm_the_dm_is_the_thread(errand: Errand, bot: ErrandBot, worker: Worker) -> None:
    """/summon in a DM: progress message and notice in the DM; invisible from any guild."""
    dm = errand.emu.create_dm(errand.world.alice)
    _, job_id = await errand.summon(channel=dm)
    msg = await errand.wait_progress_state(job_id, "succeeded")
    assert msg.channel_id == dm.id
    assert len(await poll(lambda: errand.notices(dm.id))) == 1
    handle = await errand.emu.invoke_slash(
        errand.world.alice, errand.world.channel, "job status", {"id": job_id}
    )
    assert (await handle.wait_original()).content == "No such job."


async def test_a_forum_channel_gets_a_post_per_job(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    """Summoned from a forum: the job becomes a post whose first message is the progress."""
    forum = errand.emu.create_forum(errand.world.guild, "reports")
    _, job_id = await errand.summon(channel=forum)
    msg = await errand.wait_progress_state(job_id, "succeeded")
    post = errand.emu.channel(msg.channel_id)
    assert post.parent_id == forum.id
    assert msg.id == post.id  # the post's first message
