"""The operator's job search (``JobStore.search``/``count``): each filter returns exactly the
jobs it names, the cursor pages through all of them once, and the text is taken literally. (Its
indexes are the dashboard's to choose: migrations/0014_search_without_indexes.sql.)"""

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
