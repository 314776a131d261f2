"""The operator's job search (``JobStore.search``/``count``): each filter returns exactly the
jobs it names, the cursor pages through all of them once, and the text is taken literally. Its
indexes: migrations/0021_job_list_by_id.sql; a text search reads a bounded scope at a time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from jobs.engine.state import State
from jobs.engine.store import JobStore, Submission
from jobs.engine.views import JobFilter


async def seed(store: JobStore, pool: asyncpg.Pool) -> None:
    subs = [
        Submission("noop", {}, "discord:1", {"transport": "t", "task": "count sheep"}, "g1"),
        Submission("noop", {}, "discord:2", {"transport": "t", "task": "write 50% report"}, "g2"),
        Submission("sleep", {"seconds": 5}, "discord:1", {"transport": "t", "task": "nap"}, "g1"),
        Submission("sleep", {"seconds": 7}, "discord:3", {"transport": "t"}, None),
    ]
    await store.submit_many(subs)
    await pool.execute(
        "UPDATE job SET state = 'cancelled', finished_at = now() WHERE kind = 'sleep'"
        " AND requester = 'discord:3'"
    )


def tasks(page: list[object]) -> list[str]:
    return sorted(str(j.public_id) for j in page)


async def ids(pool: asyncpg.Pool, where: str) -> list[str]:
    return sorted(r[0] for r in await pool.fetch(f"SELECT public_id FROM job WHERE {where}"))


@pytest.mark.parametrize(
    ("where", "sql"),
    [
        (JobFilter(), "true"),
        (JobFilter(kind="sleep"), "kind = 'sleep'"),
        (JobFilter(requester="discord:1"), "requester = 'discord:1'"),
        (JobFilter(origin_group="g1"), "origin_group = 'g1'"),
        (JobFilter(states=(State.CANCELLED,)), "state = 'cancelled'"),
        (JobFilter(states=(State.QUEUED, State.CANCELLED)), "true"),
        (JobFilter(text="SHEEP"), "origin->>'task' = 'count sheep'"),
        (JobFilter(text="50%"), "origin->>'task' = 'write 50% report'"),
        (JobFilter(text="0%"), "origin->>'task' = 'write 50% report'"),
        (JobFilter(text='"seconds": 7'), "(params->>'seconds')::float = 7"),
        (JobFilter(text="_"), "false"),
        (JobFilter(kind="noop", requester="discord:2"), "requester = 'discord:2'"),
        (JobFilter(since=datetime.now(UTC) + timedelta(hours=1)), "false"),
        (JobFilter(until=datetime.now(UTC) + timedelta(hours=1)), "true"),
    ],
)
async def test_each_filter_returns_exactly_its_jobs(
    store: JobStore, pool: asyncpg.Pool, where: JobFilter, sql: str
) -> None:
    await seed(store, pool)
    assert await pool.fetchval("SELECT count(*) FROM job WHERE state = 'cancelled'") == 1
    page = await store.search(where)
    assert tasks(page.jobs) == await ids(pool, sql)
    assert page.after is None
    assert await store.count(where, cap=1000) == len(page.jobs)


@pytest.mark.parametrize("newest_first", [True, False])
async def test_the_cursor_pages_through_every_job_once_in_order(
    store: JobStore, pool: asyncpg.Pool, newest_first: bool
) -> None:
    await store.submit_many([Submission("noop", {}, "r", {"transport": "t"}) for _ in range(23)])
    seen: list[tuple[datetime, int]] = []
    after: int | None
    after = None
    pages = 0
    while True:
        page = await store.search(JobFilter(), after=after, newest_first=newest_first, limit=5)
        seen += [(j.created_at, j.id) for j in page.jobs]
        pages += 1
        if page.after is None:
            break
        after = page.after
    assert pages == 5
    assert len(seen) == len(set(seen)) == 23
    assert seen == sorted(seen, reverse=newest_first)
    assert await store.count(JobFilter(), cap=10) == 10  # capped


async def test_time_filters_find_jobs_whose_ids_came_out_of_creation_order(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """The time bounds are id bounds too (job_first_id_at); a job whose id is higher than a
    later job's (their transactions overlapped) is still found by its created_at."""
    await store.submit_many([Submission("noop", {}, "r", {"transport": "t"}) for _ in range(40)])
    base = datetime(2026, 1, 1, tzinfo=UTC)
    # Ids in order, times an hour apart, except job 20, made (by its time) before job 10.
    await pool.execute(
        "UPDATE job SET created_at = $1::timestamptz + (id - (SELECT min(id) FROM job))"
        " * interval '1 hour'",
        base,
    )
    first = await pool.fetchval("SELECT min(id) FROM job")
    await pool.execute(
        "UPDATE job SET created_at = $1::timestamptz + interval '9 hours 59 minutes' WHERE id = $2",
        base,
        first + 20,
    )
    since = base + timedelta(hours=30)
    until = base + timedelta(hours=10)
    for where, sql in [
        (JobFilter(since=since), f"created_at >= '{since.isoformat()}'"),
        (JobFilter(until=until), f"created_at < '{until.isoformat()}'"),
        (
            JobFilter(since=base + timedelta(hours=5), until=until),
            f"created_at >= '{(base + timedelta(hours=5)).isoformat()}'"
            f" AND created_at < '{until.isoformat()}'",
        ),
    ]:
        page = await store.search(where, limit=100)
        assert tasks(page.jobs) == await ids(pool, sql)
        assert await store.count(where, cap=1000) == len(page.jobs)
    assert first + 20 in [j.id for j in (await store.search(JobFilter(until=until))).jobs]


async def test_a_text_search_reads_a_bounded_scope_and_pages_on_from_its_end(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """With a scope of 10, a search for a word in 3 of 35 jobs returns each hit once over the
    pages, each page having read at most 10 jobs."""
    subs = [
        Submission(
            "noop", {}, "r", {"transport": "t", "task": f"job {n}" + (" needle" * (n % 12 == 0))}
        )
        for n in range(35)
    ]
    await store.submit_many(subs)
    found: list[str] = []
    after = None
    pages = 0
    while True:
        page = await store.search(JobFilter(text="NEEDLE"), after=after, limit=5, scope=10)
        assert page.searched is not None
        assert page.searched <= 10
        found += [j.public_id for j in page.jobs]
        pages += 1
        if page.after is None:
            break
        after = page.after
    assert sorted(found) == await ids(pool, "origin->>'task' LIKE '%needle%'")
    assert len(found) == 3
    assert pages == 4
    assert await store.count(JobFilter(text="needle"), cap=100, scope=10) == 0  # jobs 25-34
    assert await store.count(JobFilter(text="needle"), cap=100, scope=11) == 1  # and job 24
