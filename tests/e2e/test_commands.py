"""Who may do what, where jobs are visible, and bad input: short ephemeral answers that change
nothing."""

from __future__ import annotations

import pytest

from bot.client import ErrandBot
from bot.commands import MAX_NOTE, MAX_PARAMS, MAX_TASK
from discord_emulator import InteractionRefused
from discord_emulator import permissions as P
from discord_emulator.testing import running_bot
from jobs.errors import IdempotencyConflict
from jobs.runtime.worker import Worker

from .conftest import Errand, state_of


async def _ask(
    errand: Errand,
    user: object,
    channel: object,
    command: str,
    options: dict[str, object] | None = None,
) -> tuple[str, bool]:
    handle = await errand.emu.invoke_slash(user, channel, command, options or {})  # type: ignore[arg-type]
    answer = await handle.wait_original()
    return answer.content, answer.ephemeral


async def _count_jobs(errand: Errand) -> int:
    return int(await errand.pool.fetchval("SELECT count(*) FROM job"))


async def test_only_the_requester_or_a_moderator_may_cancel(errand: Errand, bot: ErrandBot) -> None:
    """bob (a member) is refused by command and by button and nothing changes; carol (Manage
    Threads) may cancel."""
    emu, world = errand.emu, errand.world
    bob, carol = emu.create_user("bob"), emu.create_user("carol")
    emu.add_member(world.guild, bob)
    emu.add_member(world.guild, carol)
    emu.create_role(world.guild, "mods", P.MANAGE_THREADS, members=[carol])
    _, job_id = await errand.summon(params="steps=1 step_seconds=60")
    msg = await errand.wait_progress_state(job_id, "queued")

    text, ephemeral = await _ask(errand, bob, world.channel, "job cancel", {"id": job_id})
    assert ephemeral
    assert text == f"Only the requester or an operator can cancel job `{job_id}`."
    click = await emu.click(bob, msg, f"errand:cancel:{job_id}")
    answer = await click.wait_original()
    assert answer.ephemeral
    assert answer.content == text
    assert (await errand.job(job_id)).state.value == "queued"
    events = (await errand.store.status(job_id)).events
    assert [e.to_state.value for e in events] == ["queued"]

    text, _ = await _ask(errand, carol, world.channel, "job cancel", {"id": job_id})
    assert text == f"Cancelled job `{job_id}`."
    await errand.wait_progress_state(job_id, "cancelled")
    text, _ = await _ask(errand, world.alice, world.channel, "job cancel", {"id": job_id})
    assert text == f"Too late: job `{job_id}` already cancelled."


async def test_cancel_says_too_late_after_success(
    errand: Errand, bot: ErrandBot, worker: Worker
) -> None:
    """Cancelling a job that already succeeded changes nothing and says so."""
    _, job_id = await errand.summon(params="steps=1 step_seconds=0")
    await errand.wait_progress_state(job_id, "succeeded")
    text, ephemeral = await _ask(
        errand, errand.world.alice, errand.world.channel, "job cancel", {"id": job_id}
    )
    assert ephemeral
    assert text == f"Too late: job `{job_id}` already succeeded."
    assert (await errand.job(job_id)).state.value == "succeeded"


async def test_a_job_from_another_guild_is_no_such_job(errand: Errand, bot: ErrandBot) -> None:
    """In another guild the same person gets "No such job." for status and cancel, the same
    answer as for an id that never existed; the job is untouched."""
    emu, world = errand.emu, errand.world
    other = emu.create_guild("Other")
    chan = emu.create_channel(other, "elsewhere")
    emu.add_member(other, world.alice)
    _, job_id = await errand.summon(params="steps=1 step_seconds=60")
    for command, options in [
        ("job status", {"id": job_id}),
        ("job cancel", {"id": job_id}),
        ("job status", {"id": "zzzzzzzz"}),
    ]:
        text, ephemeral = await _ask(errand, world.alice, chan, command, options)
        assert (text, ephemeral) == ("No such job.", True)
    text, _ = await _ask(errand, world.alice, chan, "job list")
    assert job_id not in text
    assert (await errand.job(job_id)).state.value == "queued"


async def test_status_in_a_thread_needs_no_id_and_list_shows_my_jobs(
    errand: Errand, bot: ErrandBot
) -> None:
    """Inside a job's thread /job status shows that job; /job list shows the caller's jobs."""
    _, job_id = await errand.summon(params="steps=1 step_seconds=60")
    thread_id = await errand.thread_of(job_id)
    text, ephemeral = await _ask(errand, errand.world.alice, thread_id, "job status")
    assert ephemeral
    assert f"`{job_id}`" in text
    assert state_of(text) == "queued"
    text, _ = await _ask(errand, errand.world.alice, errand.world.channel, "job list")
    assert f"`{job_id}`" in text
    text, _ = await _ask(errand, errand.world.alice, errand.world.channel, "job status")
    assert text == "Give a job id, or ask inside a job's thread."


async def test_fuzzed_options_are_answered_without_crash_or_state_change(
    errand: Errand, bot: ErrandBot
) -> None:
    """Long, empty, unicode, mention and markdown inputs: bad ones get a short ephemeral answer
    and create nothing; odd but valid tasks are shown inert (no pings, no markdown). (Values
    over an option's declared length never reach the bot: see the next test.)"""
    world = errand.world
    bad = [
        {"task": ""},
        {"task": "   \n  "},
        {"task": "ok", "kind": "no-such-kind"},
        {"task": "ok", "kind": "../../etc/passwd"},
        {"task": "ok", "params": "steps=-1"},
        {"task": "ok", "params": "steps=abc"},
        {"task": "ok", "params": "unknown=1"},
        {"task": "ok", "params": '"unbalanced'},
        {"task": "ok", "params": "=1"},
        {"task": "ok", "params": "s" * MAX_PARAMS},
        {"task": "ok", "params": "steps=1e999"},
    ]
    for options in bad:
        text, ephemeral = await _ask(errand, world.alice, world.channel, "summon", options)
        assert ephemeral, (options, text)
        assert 0 < len(text) <= 500, (options, text)
    for command, options in [
        ("job status", {"id": "`;DROP TABLE job;--"}),
        ("job status", {"id": "é" * 3000}),
        ("job cancel", {"id": "<@everyone>", "reason": "x" * 5000}),
        ("job resolve", {"id": "abc", "outcome": "succeeded", "note": ""}),
    ]:
        text, ephemeral = await _ask(errand, world.alice, world.channel, command, options)
        assert (text, ephemeral) == ("No such job.", True), (command, options)
    assert await _count_jobs(errand) == 0

    odd = "@everyone <@&1> **bold** `code` ||spoiler|| 🧪ñ字\u200b" + "\n# heading"
    _, job_id = await errand.summon(odd)
    msg = await errand.wait_progress_state(job_id, "queued")
    assert "@everyone" not in msg.content.replace("@\u200beveryone", "")
    assert "\\*\\*bold\\*\\*" in msg.content
    assert await _count_jobs(errand) == 1


async def test_values_over_the_declared_limits_are_refused_before_the_bot_sees_them(
    errand: Errand, bot: ErrandBot
) -> None:
    """The options declare the limits the bot enforces (task, params, note lengths): Discord
    refuses a longer value, no interaction reaches the bot and nothing is created; a value at
    the limit reaches the bot."""
    emu, world = errand.emu, errand.world
    seen = len(emu.state.interactions)
    for command, options, name in [
        ("summon", {"task": "x" * (MAX_TASK + 1)}, "task"),
        ("summon", {"task": "ok", "params": "s" * (MAX_PARAMS + 1)}, "params"),
        ("job resolve", {"id": "abc", "outcome": "failed", "note": "n" * (MAX_NOTE + 1)}, "note"),
    ]:
        with pytest.raises(InteractionRefused, match=f"option '{name}' must be at most"):
            await emu.invoke_slash(world.alice, world.channel, command, options)
    assert len(emu.state.interactions) == seen
    assert await _count_jobs(errand) == 0

    _, job_id = await errand.summon("x" * MAX_TASK)
    assert (await errand.job(job_id)).origin["task"] == "x" * MAX_TASK
    text, ephemeral = await _ask(
        errand, world.alice, world.channel, "summon", {"task": "ok", "params": "s" * MAX_PARAMS}
    )
    assert (text, ephemeral) == ('params must look like `steps=3 note="two words"`', True)
    text, ephemeral = await _ask(
        errand,
        world.alice,
        world.channel,
        "job resolve",
        {"id": "abc", "outcome": "failed", "note": "n" * MAX_NOTE},
    )
    assert (text, ephemeral) == ("No such job.", True)
    assert await _count_jobs(errand) == 1


async def test_the_same_interaction_never_makes_two_jobs(errand: Errand, bot: ErrandBot) -> None:
    """The interaction id is the idempotency key: a repeated submit of the same request returns
    the same job; another request under that key is refused and creates nothing."""
    handle, job_id = await errand.summon()
    row = await errand.pool.fetchrow("SELECT params FROM job WHERE public_id = $1", job_id)
    job, created = await errand.store.submit(
        "demo", row["params"], requester="discord:x", idempotency_key=f"discord:{handle.id}"
    )
    assert (job.public_id, created) == (job_id, False)
    with pytest.raises(IdempotencyConflict, match=job_id):
        await errand.store.submit(
            "demo", {}, requester="discord:x", idempotency_key=f"discord:{handle.id}"
        )
    assert await _count_jobs(errand) == 1


async def test_requester_may_resolve_only_where_the_kind_allows(
    errand: Errand, bot: ErrandBot
) -> None:
    """/job resolve on a job that is not unknown says so; a requester of a kind without
    requester resolution is refused; nothing changes."""
    _, job_id = await errand.summon(params="steps=1 step_seconds=60")
    text, ephemeral = await _ask(
        errand,
        errand.world.alice,
        errand.world.channel,
        "job resolve",
        {"id": job_id, "outcome": "succeeded", "note": "checked"},
    )
    assert ephemeral
    assert "jobs of kind demo can only be resolved by an operator" in text
    assert (await errand.job(job_id)).state.value == "queued"


async def test_commands_sync_only_when_they_changed(errand: Errand) -> None:
    """The first start syncs; a restart with the same commands does not."""
    first = errand.new_bot()
    async with running_bot(errand.emu, first):
        assert first.synced is True
    second = errand.new_bot()
    async with running_bot(errand.emu, second):
        assert second.synced is False
        text, _ = await _ask(errand, errand.world.alice, errand.world.channel, "job list")
        assert text.startswith("You have no jobs here yet")


async def test_autocomplete_offers_kinds_and_their_parameters(
    errand: Errand, bot: ErrandBot
) -> None:
    """kind: the registry's kinds; params: the chosen kind's fields."""
    handle = await errand.emu.autocomplete(
        errand.world.alice,
        errand.world.channel,
        "summon",
        {"task": "t", "kind": "de"},
        focused="kind",
    )
    choices = await handle.wait_choices()
    assert "demo" in [c["value"] for c in choices]
    handle = await errand.emu.autocomplete(
        errand.world.alice,
        errand.world.channel,
        "summon",
        {"task": "t", "kind": "demo", "params": "st"},
        focused="params",
    )
    values = [c["value"] for c in await handle.wait_choices()]
    assert values == ["steps=", "step_seconds="]


async def test_with_a_dev_guild_commands_sync_to_that_guild_only(errand: Errand) -> None:
    """ERRAND_DEV_GUILD: the commands land in that guild (instant), none globally."""
    emu, world = errand.emu, errand.world
    bot = errand.new_bot(dev_guild=world.guild.id)
    async with running_bot(emu, bot):
        assert bot.synced is True
        app = emu.application
        assert app is not None
        assert app.global_commands == []
        names = sorted(c["name"] for c in app.guild_commands[world.guild.id])
        assert names == ["job", "summon"]
        text, _ = await _ask(errand, world.alice, world.channel, "job list")
        assert text.startswith("You have no jobs here yet")
