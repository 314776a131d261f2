"""Recurring schedules with an injected clock: local times across DST changes, the catch-up
policy after downtime, and each tick's job made exactly once by rounds that race."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import asyncpg
import pytest

from jobs.engine.schedule import ON_TIME_SECONDS, check_cron, ticks_to_make
from jobs.engine.store import JobStore
from jobs.errors import ErrandError

BERLIN = ZoneInfo("Europe/Berlin")


async def _run_clock(
    store: JobStore, pool: asyncpg.Pool, name: str, start: datetime, end: datetime, step: timedelta
) -> list[datetime]:
    """Put the schedule's next tick at its first after ``start`` and tick from ``start`` to
    ``end`` every ``step`` on that clock; the ticks of the jobs made, in UTC."""
    row = await pool.fetchrow("SELECT cron, tz FROM schedule WHERE name = $1", name)
    from jobs.engine.schedule import next_tick

    first = next_tick(row["cron"], ZoneInfo(row["tz"]), start)
    await pool.execute("UPDATE schedule SET next_at = $2 WHERE name = $1", name, first)
    now = start
    while now <= end:
        await store.tick(now=now)
        now += step
    return [
        r["run_at"]
        for r in await pool.fetch(
            "SELECT run_at FROM job WHERE requester = $1 ORDER BY run_at", f"schedule:{name}"
        )
    ]


async def test_a_daily_schedule_keeps_its_local_time_across_both_dst_changes(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """09:00 in Berlin is 08:00 UTC in winter and 07:00 UTC in summer; 02:30 does not exist on
    the spring change (it runs at 03:00, right after) and happens twice on the autumn one (it
    runs once)."""
    await store.add_schedule("nine", cron="0 9 * * *", tz="Europe/Berlin", kind="noop",
                             params={}, by="t")  # fmt: skip
    runs = await _run_clock(
        store,
        pool,
        "nine",
        datetime(2026, 3, 27, 0, 0, tzinfo=UTC),
        datetime(2026, 3, 31, 0, 0, tzinfo=UTC),
        timedelta(minutes=30),
    )
    assert [r.astimezone(BERLIN).strftime("%d %H:%M") for r in runs] == [
        "27 09:00", "28 09:00", "29 09:00", "30 09:00"
    ]  # fmt: skip
    assert [r.hour for r in runs] == [8, 8, 7, 7]  # UTC
    await store.add_schedule("night", cron="30 2 * * *", tz="Europe/Berlin", kind="noop",
                             params={}, by="t")  # fmt: skip
    spring = await _run_clock(
        store,
        pool,
        "night",
        datetime(2026, 3, 28, 12, 0, tzinfo=UTC),
        datetime(2026, 3, 30, 12, 0, tzinfo=UTC),
        timedelta(minutes=10),
    )
    assert [r.astimezone(BERLIN).strftime("%d %H:%M") for r in spring] == ["29 03:00", "30 02:30"]
    await pool.execute("DELETE FROM job")
    autumn = await _run_clock(
        store,
        pool,
        "night",
        datetime(2026, 10, 24, 12, 0, tzinfo=UTC),
        datetime(2026, 10, 26, 12, 0, tzinfo=UTC),
        timedelta(minutes=10),
    )
    assert [r.isoformat() for r in autumn] == [
        "2026-10-25T00:30:00+00:00",  # 02:30 CEST, the first of the two; not again at 01:30 UTC
        "2026-10-26T01:30:00+00:00",  # 02:30 CET
    ]


@pytest.mark.parametrize(("policy", "missed_made"), [("skip", 0), ("last", 1)])
async def test_after_ten_seconds_of_downtime_the_catch_up_policy_is_honoured(
    store: JobStore, pool: asyncpg.Pool, policy: str, missed_made: int
) -> None:
    """A schedule every second, the fleet down for 10 s (no round ran): the first round after
    makes each tick still on time (within ON_TIME_SECONDS), and of the ticks missed before,
    none ("skip") or only the last ("last"); then it goes on every second."""
    await store.add_schedule(
        f"every-{policy}", cron="* * * * * *", kind="noop", params={}, catch_up=policy, by="t"
    )  # type: ignore[arg-type]
    back = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
    down = back - timedelta(seconds=10)
    await pool.execute("UPDATE schedule SET next_at = $2 WHERE name = $1", f"every-{policy}", down)
    await store.tick(now=back)
    runs = [r["run_at"] for r in await pool.fetch("SELECT run_at FROM job ORDER BY run_at")]
    on_time = [back - timedelta(seconds=s) for s in range(int(ON_TIME_SECONDS), -1, -1)]
    missed = [t for t in runs if t < on_time[0]]
    assert len(missed) == missed_made
    if missed:
        assert missed == [on_time[0] - timedelta(seconds=1)]  # the last one missed
    assert [t for t in runs if t >= on_time[0]] == on_time
    for s in (1, 2):
        await store.tick(now=back + timedelta(seconds=s))
    assert await pool.fetchval("SELECT count(*) FROM job") == len(runs) + 2


async def test_each_tick_is_enqueued_once_by_rounds_that_race(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Twenty rounds at once, and again with the schedule's progress lost (a round that died
    after making its jobs): every tick has exactly one job."""
    await store.add_schedule("race", cron="* * * * * *", kind="noop", params={}, by="t")
    now = datetime.now(UTC).replace(microsecond=0)
    await pool.execute("UPDATE schedule SET next_at = $1", now - timedelta(seconds=4))
    made = await asyncio.gather(*(store.tick(now=now) for _ in range(20)))
    assert sum(made) == 5
    await pool.execute("UPDATE schedule SET next_at = $1", now - timedelta(seconds=4))
    again = await asyncio.gather(*(store.tick(now=now) for _ in range(20)))
    assert sum(again) == 0
    keys = [r["idempotency_key"] for r in await pool.fetch("SELECT idempotency_key FROM job")]
    assert len(keys) == len(set(keys)) == 5


async def test_pause_resume_and_remove(store: JobStore, pool: asyncpg.Pool) -> None:
    """A paused schedule makes nothing; resumed, it goes on from its next tick from now (what it
    missed while paused is not made up); removed, it is gone and its jobs stay."""
    await store.add_schedule("p", cron="* * * * * *", kind="noop", params={}, by="t")
    await store.pause_schedule("p")
    later = datetime.now(UTC) + timedelta(seconds=3)
    assert await store.tick(now=later) == 0
    resumed = await store.resume_schedule("p")
    assert resumed.next_at > datetime.now(UTC) - timedelta(seconds=1)
    assert await store.tick(now=later) >= 1
    await store.remove_schedule("p")
    assert await store.schedules() == []
    assert await pool.fetchval("SELECT count(*) FROM job") >= 1


@pytest.mark.parametrize(
    ("what", "kwargs"),
    [
        ("a bad cron expression", {"cron": "61 * * * *"}),
        ("too few fields", {"cron": "* *"}),
        ("an unknown timezone", {"tz": "Mars/Olympus"}),
        ("an unknown kind", {"kind": "nope"}),
        ("bad params", {"params": {"steps": "many"}}),
        ("a bad name", {"name": "a b"}),
    ],
)
async def test_bad_schedules_are_refused_and_nothing_is_stored(
    store: JobStore, pool: asyncpg.Pool, what: str, kwargs: dict[str, object]
) -> None:
    args: dict[str, object] = {"name": "s", "cron": "0 9 * * *", "kind": "demo", "params": {}}
    with pytest.raises(ErrandError):
        await store.add_schedule(**(args | kwargs), by="t")  # type: ignore[arg-type]
    assert await pool.fetchval("SELECT count(*) FROM schedule") == 0, what


def test_ticks_to_make_is_pure_and_bounded() -> None:
    """A schedule every second, a day behind: one look at most MAX_TICKS ticks, and the next
    tick is after now."""
    now = datetime(2026, 6, 1, tzinfo=UTC)
    chosen, after = ticks_to_make("* * * * * *", UTC, now - timedelta(days=1), now, "last")
    assert after > now
    assert len(chosen) <= 1 + int(ON_TIME_SECONDS) + 1
    assert check_cron(" 0  9 * * 1-5 ") == "0 9 * * 1-5"
