"""The line across a fleet of real ``errand worker`` processes, driven by the real CLI: a kind's
limit holds while a worker is SIGKILLed mid-run, a delayed job keeps its time, a queued job
shows its place, and bad input to the new commands changes nothing."""

from __future__ import annotations

import asyncio
import json
import re
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from tests.acceptance.conftest import ErrandJson, SpawnWorker
from tests.support.cli import RunErrand
from tests.support.polling import poll
from tests.support.worker_process import FAST as WORKER_FAST

FAST = WORKER_FAST | {"ERRAND_WORKER_CONCURRENCY": "4"}


async def test_a_kind_limit_holds_across_three_workers_one_of_them_killed(
    errand_json: ErrandJson, spawn_worker: SpawnWorker, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """``errand kind limit demo 3``, 3 workers (12 slots), 15 demo jobs of 1 s; one worker is
    SIGKILLed while it runs one. Sampled every 50 ms from the database, running demo jobs never
    exceed 3; every job succeeds; at the end none runs."""
    assert (await errand_json("kind", "limit", "demo", "3", "--json"))["limit"] == 3
    procs = [await spawn_worker(**FAST) for _ in range(3)]
    # Every worker up and idle (each lists itself as waiting) before the jobs come in one
    # submit: the 15 jobs then meet the three workers at once, however slowly they started.
    await poll(
        lambda: pool.fetchval("SELECT count(*) FROM worker_waiting"),
        until=lambda n: n == 3,
        within=60,
        what="three idle workers",
    )
    jobs = tmp_path / "jobs.jsonl"
    job = {"kind": "demo", "params": {"steps": 2, "step_seconds": 0.5}}
    jobs.write_text("".join(json.dumps(job) + "\n" for _ in range(15)))
    ids = [
        j["id"] for j in (await errand_json("job", "submit", "--from", str(jobs), "--json"))["jobs"]
    ]
    samples: list[int] = []
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            samples.append(
                int(
                    await pool.fetchval(
                        "SELECT count(*) FROM job WHERE kind = 'demo'"
                        " AND state IN ('running', 'cancelling')"
                    )
                )
            )
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    try:
        # Kill a worker while it holds a running job (its pid is in the attempt's worker name).
        victim = await poll(
            lambda: _holder(pool, [p.pid for p in procs]),
            until=lambda n: n is not None,  # 0, the first worker, is an index too
            within=30,
            what="a worker running demo",
        )
        procs[victim].send_signal(signal.SIGKILL)
        await procs[victim].wait()
        await poll(
            lambda: pool.fetchval(
                "SELECT count(*) FROM job WHERE kind = 'demo' AND state = 'succeeded'"
            ),
            until=lambda n: n == 15,
            within=90,
            what="all 15 demo jobs succeeded",
        )
    finally:
        done.set()
        await sampler
    assert max(samples) <= 3, max(samples)
    assert 3 in samples  # the limit was used, not just respected
    running = await pool.fetchval(
        "SELECT count(*) FROM job WHERE kind = 'demo' AND state IN ('running', 'cancelling')"
    )
    assert running == 0
    reaped = await pool.fetchval(
        "SELECT count(*) FROM attempt WHERE outcome IN ('abandoned', 'lease_lost')"
    )
    assert reaped >= 1  # the killed worker's job was reaped and run again
    states = await pool.fetch("SELECT state FROM job WHERE public_id = ANY($1)", ids)
    assert {r["state"] for r in states} == {"succeeded"}


async def _holder(pool: asyncpg.Pool, pids: list[int]) -> int | None:
    """The index in ``pids`` of a worker holding a running demo job, if any."""
    rows = await pool.fetch(
        "SELECT a.worker FROM job j JOIN attempt a ON a.id = j.current_attempt_id"
        " WHERE j.kind = 'demo' AND j.state = 'running'"
    )
    for r in rows:
        for n, pid in enumerate(pids):
            if f":{pid}:" in r["worker"]:
                return n
    return None


async def test_a_job_submitted_in_2s_starts_after_2s_and_within_1s_after(
    errand_json: ErrandJson, spawn_worker: SpawnWorker, pool: asyncpg.Pool
) -> None:
    """``--in 2s`` does not start before 2 s and starts within 1 s after; one cancelled before
    its time never runs."""
    await spawn_worker(**FAST)
    await asyncio.sleep(1.0)  # the worker is up and waiting
    before = datetime.now(UTC)
    job = await errand_json("job", "submit", "noop", "--in", "2s", "--json")
    never = await errand_json("job", "submit", "noop", "--in", "2s", "--json")
    due = datetime.fromisoformat(job["run_at"])
    assert before + timedelta(seconds=2) <= due <= before + timedelta(seconds=3)
    cancelled = await errand_json("job", "cancel", never["id"], "--json")
    assert cancelled["state"] == "cancelled"
    started = await poll(
        lambda: pool.fetchval("SELECT started_at FROM job WHERE public_id = $1", job["id"]),
        within=10,
    )
    assert due <= started <= due + timedelta(seconds=1)
    await asyncio.sleep(0.5)
    row = await pool.fetchrow("SELECT state, attempts FROM job WHERE public_id = $1", never["id"])
    assert (row["state"], row["attempts"]) == ("cancelled", 0)


async def test_job_status_shows_the_place_and_the_limit_and_the_place_goes_down(
    errand_json: ErrandJson, run_errand: RunErrand, spawn_worker: SpawnWorker
) -> None:
    """With ``demo`` limited to 1 and four jobs queued behind a running one, the last is 4th in
    line, ``1 of 1 running``; as the jobs ahead start, its place goes down to 1st."""
    await errand_json("kind", "limit", "demo", "1", "--json")
    params = ["-p", "steps=1", "-p", "step_seconds=1.5"]
    ids = [(await errand_json("job", "submit", "demo", *params, "--json"))["id"] for _ in range(5)]
    await spawn_worker(**FAST)
    last = ids[-1]
    seen: list[int] = []

    async def place() -> dict[str, object] | None:
        status = await errand_json("job", "status", last, "--json")
        if status["place"] is not None:
            seen.append(int(status["place"]["position"]))
        return status["place"]  # type: ignore[no-any-return]

    first = await poll(place, until=lambda p: p is not None and p["running"] == 1, within=20)
    assert first is not None
    assert (first["position"], first["limit"], first["running"]) == (4, 1, 1)
    # The same place in words (a job ahead may have started between the two commands).
    text = (await run_errand("job", "status", last)).out
    said = re.search(r"\b([1-4])(st|nd|rd|th) in line for demo · 1 of 1 running", text)
    assert said is not None, text
    assert said.group(2) == {"1": "st", "2": "nd", "3": "rd", "4": "th"}[said.group(1)]
    await poll(place, until=lambda p: p is not None and p["position"] == 1, within=30)
    assert seen == sorted(seen, reverse=True)
    assert {4, 3, 2, 1} <= set(seen)


BAD: list[tuple[str, list[str]]] = [
    ("negative limit", ["kind", "limit", "demo", "-1"]),
    ("limit not a number", ["kind", "limit", "demo", "lots"]),
    ("unknown kind", ["kind", "limit", "nope", "3"]),
    ("pause an unknown kind", ["kind", "pause", "nope"]),
    ("zero rate", ["kind", "rate", "demo", "0"]),
    ("a time in the past", ["job", "submit", "noop", "--at", "2001-01-01T00:00"]),
    ("an unknown timezone", ["job", "submit", "noop", "--at", "09:00", "--tz", "Mars/Olympus"]),
    ("a bad duration", ["job", "submit", "noop", "--in", "2 fortnights"]),
    ("both --at and --in", ["job", "submit", "noop", "--at", "09:00", "--in", "2h"]),
    ("priority out of range", ["job", "submit", "noop", "--priority", "11"]),
    ("a bad cron expression", ["schedule", "add", "s", "noop", "--cron", "61 * * * *"]),
    ("a schedule's unknown timezone", ["schedule", "add", "s", "noop", "--cron", "0 9 * * *",
                                       "--tz", "Nowhere/Land"]),
    ("a schedule of an unknown kind", ["schedule", "add", "s", "nope", "--cron", "0 9 * * *"]),
    ("a bad catch-up", ["schedule", "add", "s", "noop", "--cron", "0 9 * * *",
                        "--catch-up", "all"]),
    ("remove no schedule", ["schedule", "remove", "nothing"]),
]  # fmt: skip


@pytest.mark.parametrize(("what", "argv"), BAD, ids=[b[0] for b in BAD])
async def test_bad_line_input_is_one_line_exit_2_and_changes_nothing(
    what: str, argv: list[str], run_errand: RunErrand, pool: asyncpg.Pool
) -> None:
    ran = await run_errand(*argv)
    assert ran.code == 2, f"{what}: {ran.code} {ran.err}"
    assert len(ran.err.strip().splitlines()) == 1, ran.err
    assert await pool.fetchval("SELECT count(*) FROM job") == 0
    assert await pool.fetchval("SELECT count(*) FROM kind_setting") == 0
    assert await pool.fetchval("SELECT count(*) FROM schedule") == 0


async def test_kind_list_pause_and_resume_through_the_cli(
    errand_json: ErrandJson, run_errand: RunErrand
) -> None:
    """``kind list`` shows each kind's line; ``pause`` and ``resume`` change it."""
    await errand_json("job", "submit", "noop", "--json")
    await errand_json("kind", "pause", "noop", "--json")
    kinds = {k["kind"]: k for k in (await errand_json("kind", "list", "--json"))["kinds"]}
    assert kinds["noop"]["paused"] is True
    assert (kinds["noop"]["queued"], kinds["noop"]["throttled"]) == (1, "paused")
    assert kinds["demo"]["queued"] == 0  # every known kind is listed
    text = (await run_errand("kind", "list")).out
    assert any(line.startswith("noop") and "paused" in line for line in text.splitlines())
    await errand_json("kind", "resume", "noop", "--json")
    kinds = {k["kind"]: k for k in (await errand_json("kind", "list", "--json"))["kinds"]}
    assert kinds["noop"]["paused"] is False
