"""Operator commands through the real CLI: ``errand job show``, ``errand job list`` filters,
``errand outbox list/retry`` and ``errand prune`` with its retention policy. Bad input exits 2
with one line on stderr and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncpg

from jobs.engine.moves import Finish
from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.engine.views import JobView
from tests.support.cli import Ran, RunErrand

ORIGIN = {"transport": "test", "channel": "1"}


async def _ended(store: JobStore, kind: str, outcome: str, **submit: Any) -> JobView:
    """A job submitted, claimed and ended with ``outcome`` by a (pretend) worker."""
    job, _ = await store.submit(kind, {}, requester="ops", **submit)
    [claim] = await store.claim("w1", limit=1, lease_seconds=30, kinds=[kind])
    assert claim.job_id == job.id
    await store.finish_one(
        Finish(
            job.id,
            claim.attempt_id,
            outcome,
            result={"ok": 1},
            error={"type": "X", "message": "boom"},
        )
    )
    return await store.get(job.public_id)


async def _age(pool: asyncpg.Pool, job: JobView, days: int) -> None:
    """Pretend the job finished (or was created) ``days`` ago."""
    await pool.execute(
        "UPDATE job SET finished_at = CASE WHEN finished_at IS NULL THEN NULL "
        "ELSE now() - make_interval(days => $2) END, "
        "created_at = now() - make_interval(days => $2) WHERE id = $1",
        job.id,
        days,
    )


async def _exists(pool: asyncpg.Pool) -> set[str]:
    return {r["public_id"] for r in await pool.fetch("SELECT public_id FROM job")}


def _bad(ran: Ran) -> bool:
    """Exit code 2 and exactly one line on stderr."""
    return ran.code == 2 and len(ran.err.strip().splitlines()) == 1


async def test_prune_deletes_only_what_the_retention_policy_lets_go(
    run_errand: RunErrand, store: JobStore, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """Old finished jobs go (with their asset files); recent ones, queued, unknown, and jobs with
    a pending notice stay; a dead-lettered notice keeps its job unless --with-dead-notices."""
    old = await _ended(store, "noop", "succeeded")
    asset = tmp_path / "data" / "assets" / old.public_id / "big.bin"
    asset.parent.mkdir(parents=True)
    asset.write_bytes(b"x" * 10)
    await pool.execute(
        "INSERT INTO asset (job_id, attempt_id, name, size, path) "
        "VALUES ($1, 1, 'big.bin', 10, $2)",
        old.id,
        str(asset),
    )
    recent = await _ended(store, "noop", "succeeded")
    pending = await _ended(store, "noop", "failed", origin=ORIGIN)
    dead = await _ended(store, "noop", "succeeded", origin=ORIGIN)
    await pool.execute("UPDATE outbox SET delivered_at = now() WHERE job_id = $1", pending.id)
    await pool.execute(
        "UPDATE outbox SET delivered_at = NULL WHERE id = "
        "(SELECT max(id) FROM outbox WHERE job_id = $1)",
        pending.id,
    )
    await pool.execute("UPDATE outbox SET delivered_at = now() WHERE job_id = $1", dead.id)
    await pool.execute(
        "UPDATE outbox SET delivered_at = NULL, dead_at = now() WHERE id = "
        "(SELECT max(id) FROM outbox WHERE job_id = $1)",
        dead.id,
    )
    unknown = await _ended(store, "noop", "unknown")
    queued, _ = await store.submit("noop", {}, requester="ops")
    for job in (old, pending, dead, unknown, queued):
        await _age(pool, job, 40)
    everything = await _exists(pool)

    for args in (("--older-than", "30 days"), ("--older-than", "-1d"), ()):
        bad = await run_errand("prune", *args)
        assert _bad(bad), (args, bad)
    assert await _exists(pool) == everything

    dry = await run_errand("prune", "--older-than", "30d", "--dry-run", "--json")
    assert (dry.code, json.loads(dry.out)["jobs"]) == (0, [old.public_id])
    assert await _exists(pool) == everything

    real = await run_errand("prune", "--older-than", "30d", "--json")
    assert (real.code, json.loads(real.out)) == (
        0,
        {"pruned": 1, "jobs": [old.public_id], "files_removed": 1, "dry_run": False},
    )
    assert await _exists(pool) == everything - {old.public_id}
    assert not asset.parent.exists()
    assert await pool.fetchval("SELECT count(*) FROM event WHERE job_id = $1", old.id) == 0

    more = await run_errand("prune", "--older-than", "30d", "--with-dead-notices", "--json")
    assert (more.code, json.loads(more.out)["jobs"]) == (0, [dead.public_id])
    assert await _exists(pool) == {
        recent.public_id,
        pending.public_id,
        unknown.public_id,
        queued.public_id,
    }


async def test_outbox_list_and_retry_revive_only_dead_letters(
    run_errand: RunErrand, store: JobStore, pool: asyncpg.Pool
) -> None:
    """`outbox list` shows the dead letter and why; `outbox retry ID` makes it due again with
    its attempts reset; unknown, pending or missing ids exit 2 and change nothing."""
    job, _ = await store.submit("noop", {}, requester="ops", origin=ORIGIN)
    await store.cancel(job.public_id, actor=Actor.OPERATOR, by="ops")
    first, second = [
        r["id"]
        for r in await pool.fetch("SELECT id FROM outbox WHERE job_id = $1 ORDER BY id", job.id)
    ]
    await pool.execute(
        "UPDATE outbox SET dead_at = now(), attempts = 6, "
        "last_error = '403 Missing Access', available_at = now() + interval '1h' "
        "WHERE id = $1",
        first,
    )
    before = [dict(r) for r in await pool.fetch("SELECT * FROM outbox ORDER BY id")]

    listed = await run_errand("outbox", "list", "--json")
    assert listed.code == 0, listed.err
    assert [
        (n["id"], n["public_id"], n["last_error"], n["attempts"])
        for n in json.loads(listed.out)["notices"]
    ] == [(first, job.public_id, "403 Missing Access", 6)]
    for args in (
        ("retry", "999999"),
        ("retry", str(second)),
        ("retry", str(first), "999999"),
        ("retry",),
        ("retry", str(first), "--all-dead"),
        ("retry", "abc"),
        ("list", "--status", "lost"),
    ):
        ran = await run_errand("outbox", *args)
        assert _bad(ran), (args, ran)
    assert [dict(r) for r in await pool.fetch("SELECT * FROM outbox ORDER BY id")] == before

    retried = await run_errand("outbox", "retry", str(first), "--json")
    assert (retried.code, json.loads(retried.out)) == (0, {"retried": [first]})
    row = await pool.fetchrow(
        "SELECT dead_at, attempts, available_at <= now() AS due, "
        "last_error FROM outbox WHERE id = $1",
        first,
    )
    assert dict(row) == {"dead_at": None, "attempts": 0, "due": True, "last_error": None}
    nothing = await run_errand("outbox", "retry", "--all-dead", "--json")
    assert json.loads(nothing.out) == {"retried": []}


async def test_job_show_tells_the_whole_story_in_order(
    run_errand: RunErrand, store: JobStore, pool: asyncpg.Pool
) -> None:
    """`job show` merges events, attempts and notices in time order; an unknown id exits 2."""
    job = await _ended(store, "noop", "failed", origin=ORIGIN)
    shown = await run_errand("job", "show", job.public_id, "--json")
    assert shown.code == 0, shown.err
    out = json.loads(shown.out)
    timeline = [(e["what"], e["text"]) for e in out["timeline"]]
    assert [t for w, t in timeline if w == "event"] == [
        "- -> queued by requester: submitted",
        "queued -> running by worker",
        "running -> failed by worker",
    ]
    assert [t for w, t in timeline if w == "attempt"] == [
        "attempt 1 started on w1",
        "attempt 1 ended: failed",
    ]
    assert len([t for w, t in timeline if w == "notice"]) == 3
    assert [e["at"] for e in out["timeline"]] == sorted(e["at"] for e in out["timeline"])
    assert (out["id"], out["state"], len(out["notices"])) == (job.public_id, "failed", 3)
    text = await run_errand("job", "show", job.public_id)
    assert "attempt 1 started on w1" in text.out
    missing = await run_errand("job", "show", "zzzzzz")
    assert _bad(missing), missing


async def test_job_list_filters_by_state_kind_requester_and_age(
    run_errand: RunErrand, store: JobStore, pool: asyncpg.Pool
) -> None:
    """`job list` narrows by several states, kind, requester and --newer-than."""
    c = await _ended(store, "noop", "unknown")
    a, _ = await store.submit("noop", {}, requester="alice")
    b, _ = await store.submit("sleep", {"seconds": 1}, requester="bob")
    await _age(pool, c, 2)
    got = await run_errand("job", "list", "--state", "queued", "--state", "unknown", "--json")
    assert {j["id"] for j in json.loads(got.out)["jobs"]} == {a.public_id, b.public_id, c.public_id}
    got = await run_errand("job", "list", "--kind", "noop", "--requester", "alice", "--json")
    assert [j["id"] for j in json.loads(got.out)["jobs"]] == [a.public_id]
    got = await run_errand("job", "list", "--newer-than", "3600", "--json")
    assert {j["id"] for j in json.loads(got.out)["jobs"]} == {a.public_id, b.public_id}
    assert (await run_errand("job", "list", "--state", "sleeping")).code == 2


async def test_a_reused_idempotency_key_returns_the_same_job_or_is_refused_as_a_conflict(
    run_errand: RunErrand, pool: asyncpg.Pool
) -> None:
    """The same key, kind and params give back the first job; the key with another kind or
    other params exits 2 with one line naming the conflict, and creates nothing."""
    first = await run_errand(
        "job", "submit", "sleep", "-p", "seconds=5", "--idempotency-key", "k-1", "--json"
    )
    assert first.code == 0, first.err
    made = json.loads(first.out)
    again = await run_errand(
        "job", "submit", "sleep", "-p", "seconds=5", "--idempotency-key", "k-1", "--json"
    )
    assert again.code == 0, again.err
    assert (json.loads(again.out)["id"], json.loads(again.out)["created"]) == (made["id"], False)

    other_kind = await run_errand("job", "submit", "noop", "--idempotency-key", "k-1")
    other_params = await run_errand(
        "job", "submit", "sleep", "-p", "seconds=6", "--idempotency-key", "k-1"
    )
    for ran in (other_kind, other_params):
        assert _bad(ran), ran
        assert "idempotency key 'k-1' was already used for a different request" in ran.err
        assert made["id"] in ran.err
        assert ran.out == ""
    assert await _exists(pool) == {made["id"]}
