"""The bot's pacing, without Discord: which request goes next and when, under the bot's share
of the global limit, and how far apart the edits of one message are."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import UTC, datetime, timedelta

import pytest

from bot.delivery.discord_io import Turns
from bot.delivery.pacer import (
    EDIT,
    NOTICE,
    OLD_MESSAGE_SECONDS,
    SETUP,
    TERMINAL_EDIT,
    Pacer,
    edit_interval,
    edit_wait,
)
from bot.errors import Stopping


def drain(pacer: Pacer[str], now: float) -> list[tuple[float, str]]:
    """Grant every queued request as soon as the pacer allows: (time, request) pairs."""
    granted: list[tuple[float, str]] = []
    while (delay := pacer.wait(now)) is not None:
        now += delay
        item = pacer.pop(now)
        if item is not None:
            granted.append((round(now, 9), item))
    return granted


def test_a_backlog_is_granted_at_the_rate_with_one_banked_turn() -> None:
    """30 requests at 10 per second: the first two at once (one turn is banked after a quiet
    spell), then one every 0.1 s; no second ever holds more than rate + 1 grants."""
    pacer: Pacer[str] = Pacer(10)
    for n in range(30):
        pacer.push(EDIT, f"r{n}")
    granted = drain(pacer, 100.0)
    times = [t for t, _ in granted]
    assert [r for _, r in granted] == [f"r{n}" for n in range(30)]
    assert times[:3] == [100.0, 100.0, 100.1]
    assert all(abs(b - a - 0.1) < 1e-9 for a, b in itertools.pairwise(times[1:]))
    assert max(sum(1 for t in times if s <= t < s + 1) for s in times) == 11


def test_after_the_backlog_the_pace_holds_and_a_quiet_spell_banks_only_one_turn() -> None:
    """A request right after a backlog waits out its interval; after a long quiet spell two go
    at once, not a burst of everything that could have been sent meanwhile."""
    pacer: Pacer[str] = Pacer(10)
    for n in range(3):
        pacer.push(EDIT, f"a{n}")
    assert [t for t, _ in drain(pacer, 100.0)] == [100.0, 100.0, 100.1]
    pacer.push(EDIT, "next")
    assert abs(pacer.wait(100.15) - 0.05) < 1e-9  # type: ignore[operator]
    assert pacer.pop(100.15) is None
    assert pacer.pop(100.2) == "next"
    for n in range(5):
        pacer.push(EDIT, f"b{n}")
    assert [t for t, _ in drain(pacer, 160.0)] == [160.0, 160.0, 160.1, 160.2, 160.3]


def test_the_end_of_a_job_goes_first_then_notices_then_threads_then_progress_edits() -> None:
    """Priority order, first come first served within one priority."""
    pacer: Pacer[str] = Pacer(1000)
    pacer.push(EDIT, "edit 1")
    pacer.push(SETUP, "thread 1")
    pacer.push(NOTICE, "notice 1")
    pacer.push(EDIT, "edit 2")
    pacer.push(TERMINAL_EDIT, "terminal 1")
    pacer.push(SETUP, "thread 2")
    pacer.push(TERMINAL_EDIT, "terminal 2")
    assert [r for _, r in drain(pacer, 0.0)] == [
        "terminal 1",
        "terminal 2",
        "notice 1",
        "thread 1",
        "thread 2",
        "edit 1",
        "edit 2",
    ]


def test_a_request_whose_waiter_is_gone_spends_no_turn() -> None:
    """A cancelled waiter is skipped and the next request takes the turn it would have had."""
    pacer: Pacer[str] = Pacer(10)
    for name in ("a", "b", "c", "d"):
        pacer.push(EDIT, name)
    gone = {"b", "c"}
    assert pacer.pop(0.0, gone=gone.__contains__) == "a"
    assert pacer.wait(0.0) == 0.1
    assert pacer.pop(0.1, gone=gone.__contains__) == "d"
    assert len(pacer) == 0
    assert pacer.wait(0.1) is None
    assert pacer.pop(5.0) is None


def test_nothing_is_granted_before_its_turn() -> None:
    """pop() before the turn has come returns nothing and keeps the request queued."""
    pacer: Pacer[str] = Pacer(2)
    pacer.push(EDIT, "a")
    pacer.push(EDIT, "b")
    pacer.push(EDIT, "c")
    assert pacer.pop(10.0) == "a"
    assert pacer.pop(10.0) == "b"
    assert pacer.wait(10.0) == 0.5
    assert pacer.pop(10.4) is None
    assert len(pacer) == 1
    assert pacer.pop(10.5) == "c"


def test_edits_of_a_message_older_than_an_hour_use_the_slower_interval() -> None:
    """Discord allows fewer edits of old messages: an hour after posting, the interval is the
    old-message one; before that (or for a message not yet posted) the normal one."""
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    young = now - timedelta(seconds=OLD_MESSAGE_SECONDS - 1)
    old = now - timedelta(seconds=OLD_MESSAGE_SECONDS + 1)
    assert edit_interval(young, now, interval=1.0, old_interval=2.0) == 1.0
    assert edit_interval(old, now, interval=1.0, old_interval=2.0) == 2.0
    assert edit_interval(None, now, interval=1.0, old_interval=2.0) == 1.0


def test_the_next_edit_waits_out_the_rest_of_the_interval() -> None:
    """A message never edited by this process may be edited at once; otherwise the wait is what
    is left of the interval since the last edit, never negative."""
    assert edit_wait(None, 1.0, 50.0) == 0.0
    assert abs(edit_wait(50.0, 1.0, 50.4) - 0.6) < 1e-9
    assert edit_wait(50.0, 1.0, 51.0) == 0.0
    assert edit_wait(50.0, 1.0, 70.0) == 0.0


async def test_waiters_get_their_turns_in_priority_order_at_the_rate() -> None:
    """The asyncio side: waiters queued together are released by priority, spaced by the
    interval (after the banked turn), and a cancelled waiter does not hold up the others."""
    turns = Turns(20)  # one turn per 0.05 s
    released: list[tuple[str, float]] = []

    async def ask(name: str, priority: int) -> None:
        await turns.wait(priority)
        released.append((name, time.monotonic()))

    try:
        # The first waiter takes the free turn at once; the rest queue behind it.
        await ask("first", EDIT)
        tasks = [
            asyncio.create_task(ask(name, priority))
            for name, priority in [
                ("edit", EDIT),
                ("thread", SETUP),
                ("cancelled", NOTICE),
                ("notice", NOTICE),
                ("terminal", TERMINAL_EDIT),
            ]
        ]
        await asyncio.sleep(0)
        tasks[2].cancel()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
    finally:
        turns.close()
    assert [name for name, _ in released] == ["first", "terminal", "notice", "thread", "edit"]
    # Turns are spaced 0.05 s apart from the first; a waiter may wake late, never early (the
    # margin covers the first waiter's own wake-up delay).
    start = released[0][1]
    late = [(name, at - start) for name, at in released[2:]]
    assert all(at >= 0.05 * n - 0.01 for n, (_, at) in enumerate(late, 1)), late


async def test_a_closed_queue_sends_nothing_more_and_tells_every_waiter() -> None:
    """Closing (the bot stops): waiters still queued, and any later request, get Stopping; a
    turn granted before the close stands (that request goes)."""
    turns = Turns(1)  # one turn per second
    for _ in range(2):  # the first turn and the banked one; the rest wait
        await asyncio.wait_for(turns.wait(EDIT), 1)
    waiting = [asyncio.create_task(turns.wait(p)) for p in (NOTICE, EDIT)]
    await asyncio.sleep(0.05)
    assert not any(t.done() for t in waiting)
    turns.close()
    results = await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 1)
    assert [type(r) for r in results] == [Stopping, Stopping]
    with pytest.raises(Stopping):
        await turns.wait(TERMINAL_EDIT)
