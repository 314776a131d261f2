"""Bulk submit on real PostgreSQL: idempotent under concurrent duplicates, each row's own values
stored, one bad row or a reused key refuses the whole batch, and quotas count each row."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

import asyncpg
import pytest

import tests.support.kinds  # noqa: F401  (registers the test kinds)
from jobs.engine.store import JobStore, Quotas, Submission
from jobs.errors import IdempotencyConflict, InvalidParams, UnknownKind
from jobs.runtime.registry import Registry

ORIGIN = {"transport": "test"}


async def test_concurrent_duplicate_bulk_submits_stay_idempotent(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Four bulk submits at once share 300 keys (each in its own order, some repeated inside a
    batch) and carry 50 rows without a key each: every key makes exactly one job, every call
    names that job for the key, and every job has its event and outbox row."""
    keys = [f"k{i}" for i in range(300)]

    def batch(seed: int) -> list[Submission]:
        mine = keys + keys[:20]  # repeats inside the batch
        random.Random(seed).shuffle(mine)
        rows = [Submission("noop", {}, "t", ORIGIN, None, k) for k in mine]
        return rows + [Submission("noop", {}, "t", ORIGIN) for _ in range(50)]

    batches = [batch(seed) for seed in range(4)]
    answers = await asyncio.gather(*(store.submit_many(b) for b in batches))

    by_key: dict[str, set[str]] = {}
    made = 0
    for rows, answer in zip(batches, answers, strict=True):
        assert len(answer) == len(rows)
        for row, (public_id, created) in zip(rows, answer, strict=True):
            if row.idempotency_key is not None:
                by_key.setdefault(row.idempotency_key, set()).add(public_id)
                made += created
    assert all(len(ids) == 1 for ids in by_key.values())
    assert len(by_key) == 300
    assert made == 300  # each key created once, whichever call won it
    counts = await pool.fetchrow(
        "SELECT (SELECT count(*) FROM job WHERE idempotency_key IS NOT NULL) AS keyed,"
        " (SELECT count(*) FROM job) AS jobs, (SELECT count(*) FROM event) AS events,"
        " (SELECT count(*) FROM outbox) AS outbox"
    )
    assert dict(counts) == {"keyed": 300, "jobs": 500, "events": 500, "outbox": 500}
    stored = {
        r["idempotency_key"]: r["public_id"]
        for r in await pool.fetch("SELECT idempotency_key, public_id FROM job")
        if r["idempotency_key"]
    }
    assert stored == {k: next(iter(ids)) for k, ids in by_key.items()}


async def test_a_bulk_submit_stores_each_rows_own_values_whether_a_column_varies_or_repeats(
    store: JobStore, registry: Registry, pool: asyncpg.Pool
) -> None:
    """A column every row shares is sent once, a column that varies per row: either way each
    job keeps its own kind, params, requester, origin, group, key, attempts and deadline, with
    and without idempotency keys in the batch."""
    shared = [Submission("noop", {}, "t", ORIGIN, "g") for _ in range(3)]
    # Params are validated once per kind and params object: one object shared by two kinds,
    # and empty params of two kinds whose models differ, are each validated by their own kind.
    seconds = {"seconds": 2}
    varied = [
        Submission("noop", {}, "ann", None),
        Submission("busy", seconds, "bob", {"transport": "x", "n": 1}, "g1"),
        Submission("deadlined", seconds, "ann", ORIGIN, "g2"),
        Submission("crashy", {}, "cy", {"transport": "y"}),
    ]
    keyed = [
        replace(sub, idempotency_key=key)
        for sub, key in zip(varied, ["key-a", None, "key-c", "key-d"], strict=True)
    ]
    for batch in (shared, varied, keyed):
        answer = await store.submit_many(batch)
        assert [created for _, created in answer] == [True] * len(batch)
        for sub, (public_id, _) in zip(batch, answer, strict=True):
            spec = registry.get(sub.kind)
            job = await pool.fetchrow(
                "SELECT j.*, extract(epoch FROM j.deadline_at - j.created_at) AS within,"
                " (SELECT count(*) FROM outbox o WHERE o.job_id = j.id) AS notices"
                " FROM job j WHERE public_id = $1",
                public_id,
            )
            assert job is not None
            assert (job["kind"], job["params"], job["requester"]) == (
                sub.kind,
                spec.validate(sub.params),
                sub.requester,
            )
            assert (job["origin"], job["origin_group"], job["idempotency_key"]) == (
                sub.origin or {},
                sub.origin_group,
                sub.idempotency_key,
            )
            assert job["max_attempts"] == spec.max_attempts
            assert job["within"] == spec.deadline_seconds  # None: no deadline
            assert job["notices"] == (1 if sub.origin else 0)
    assert [spec.max_attempts for spec in map(registry.get, ("noop", "busy"))] == [3, 1]


async def test_a_bulk_submit_with_one_bad_row_creates_nothing(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    rows = [Submission("noop"), Submission("sleep", {"seconds": 1}), Submission("sleep", {"x": 1})]
    # The bad row is named counted from 1, as a file's lines are.
    with pytest.raises(InvalidParams, match="row 3"):
        await store.submit_many(rows)
    with pytest.raises(UnknownKind, match="row 2"):
        await store.submit_many([Submission("noop"), Submission("nope")])
    assert await pool.fetchval("SELECT count(*) FROM job") == 0


async def test_a_bulk_submit_that_reuses_a_key_for_another_request_creates_nothing(
    store: JobStore, pool: asyncpg.Pool
) -> None:
    """Like submit: a key names one request. Reused for other params (in the database, or
    inside the batch), the whole batch is refused and nothing is written."""
    await store.submit_many([Submission("sleep", {"seconds": 1}, idempotency_key="k")])
    before = await pool.fetchval("SELECT count(*) FROM job")
    with pytest.raises(IdempotencyConflict):
        await store.submit_many(
            [Submission("noop"), Submission("sleep", {"seconds": 2}, idempotency_key="k")]
        )
    with pytest.raises(InvalidParams, match="row 2: idempotency key 'j' is used by row 1"):
        await store.submit_many(
            [
                Submission("sleep", {"seconds": 3}, idempotency_key="j"),
                Submission("sleep", {"seconds": 4}, idempotency_key="j"),
            ]
        )
    assert await pool.fetchval("SELECT count(*) FROM job") == before == 1
    [(same, created)] = await store.submit_many(
        [Submission("sleep", {"seconds": 1}, idempotency_key="k")]
    )
    assert not created
    assert same == await pool.fetchval("SELECT public_id FROM job WHERE idempotency_key = 'k'")


async def test_a_bulk_submit_under_quotas_still_counts_each_row(
    pool: asyncpg.Pool, registry: Registry
) -> None:
    store = JobStore(pool, registry, quotas=Quotas(per_requester=2))
    from jobs.errors import QuotaExceeded

    with pytest.raises(QuotaExceeded):
        await store.submit_many([Submission("noop", requester="q") for _ in range(3)])
    assert await pool.fetchval("SELECT count(*) FROM job WHERE requester = 'q'") == 2
