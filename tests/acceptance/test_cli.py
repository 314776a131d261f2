"""The job record's acceptance through the real CLI: submit, status, cancel, crash and restart."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg

from tests.acceptance.conftest import ErrandJson, SpawnWorker
from tests.support.cli import RunErrand
from tests.support.polling import poll


async def _wait_state(pool: asyncpg.Pool, public_id: str, state: str, within: float) -> None:
    await poll(
        lambda: pool.fetchval("SELECT state::text FROM job WHERE public_id = $1", public_id),
        within,
        until=lambda stored: stored == state,
        what=f"{public_id} {state}",
    )


async def test_sleep_job_is_queued_then_running_then_cancelled_within_a_second(
    errand_json: ErrandJson, spawn_worker: SpawnWorker, pool: asyncpg.Pool
) -> None:
    """submit returns at once; status shows queued, then running; cancel -> cancelled within
    a second of the request, and the job never reports success afterwards."""
    started = time.monotonic()
    job = await errand_json("job", "submit", "sleep", "--param", "seconds=30", "--json")
    assert time.monotonic() - started < 5  # a whole CLI process, start-up included
    assert job["state"] == "queued"
    assert len(job["id"]) <= 12
    status = await errand_json("job", "status", job["id"], "--json")
    assert (status["state"], status["attempts"]) == ("queued", 0)

    await spawn_worker()
    await _wait_state(pool, job["id"], "running", within=10)
    status = await errand_json("job", "status", job["id"], "--json")
    assert (status["state"], status["attempts"]) == ("running", 1)

    cancel = await errand_json("job", "cancel", job["id"], "--reason", "enough", "--json")
    assert cancel["outcome"] in ("cancelling", "cancelled")
    await _wait_state(pool, job["id"], "cancelled", within=5)
    requested, acknowledged = await pool.fetchval(
        "SELECT array_agg(e.at ORDER BY e.id) FROM event e JOIN job j ON j.id = e.job_id "
        "WHERE j.public_id = $1 AND e.to_state IN ('cancelling', 'cancelled') AND NOT e.ignored",
        job["id"],
    )
    assert (acknowledged - requested).total_seconds() < 1.0

    await asyncio.sleep(1.0)  # give a misbehaving worker time to report success
    status = await errand_json("job", "status", job["id"], "--json")
    assert status["state"] == "cancelled"
    assert status["reason"] == "enough"  # the operator's own words, said once
    assert [e["to"] for e in status["events"] if not e["ignored"]] == [
        "queued",
        "running",
        "cancelling",
        "cancelled",
    ]
    for event in status["events"]:
        assert set(event) >= {"from", "to", "actor", "attempt", "reason", "at"}
    assert "succeeded" not in [e["to"] for e in status["events"]]


async def test_a_worker_killed_mid_job_is_taken_over_after_its_lease_expires(
    errand_json: ErrandJson, spawn_worker: SpawnWorker, pool: asyncpg.Pool
) -> None:
    """SIGKILL a worker while it runs a job; another worker finishes it after lease expiry."""
    fast = {
        "ERRAND_WORKER_LEASE_SECONDS": "1",
        "ERRAND_WORKER_HEARTBEAT_SECONDS": "0.3",
        "ERRAND_WORKER_REAPER_SECONDS": "0.2",
        "ERRAND_WORKER_RETRY_BASE_SECONDS": "0",
    }
    first = await spawn_worker(**fast)
    job = await errand_json("job", "submit", "sleep", "--param", "seconds=2", "--json")
    await _wait_state(pool, job["id"], "running", within=10)
    first.kill()
    await first.wait()
    await spawn_worker(**fast)
    await _wait_state(pool, job["id"], "succeeded", within=15)

    status = await errand_json("job", "status", job["id"], "--json")
    outcomes = [a["outcome"] for a in status["attempt_history"]]
    assert outcomes == ["abandoned", "succeeded"]
    moves = [(e["from"], e["to"], e["actor"]) for e in status["events"] if not e["ignored"]]
    assert moves == [
        (None, "queued", "requester"),
        ("queued", "running", "worker"),
        ("running", "queued", "system"),
        ("queued", "running", "worker"),
        ("running", "succeeded", "worker"),
    ]


async def test_bad_input_exits_2_with_one_line_and_changes_nothing(
    run_errand: RunErrand, pool: asyncpg.Pool
) -> None:
    """Unknown id, bad params, unknown kind, bad --param, illegal transition, bad usage:
    exit 2, one stderr line, no change in the database."""
    queued = await run_errand("job", "submit", "sleep", "--json")
    assert queued.code == 0
    before = await pool.fetchval("SELECT count(*) FROM event")
    cases = [
        ("job", "status", "zzzzzzzz"),
        ("job", "cancel", "zzzzzzzz"),
        ("job", "submit", "sleep", "--param", "seconds=soon"),
        ("job", "submit", "sleep", "--param", "seconds"),
        ("job", "submit", "no-such-kind"),
        ("job", "resolve", "zzzzzzzz", "--as", "failed", "--note", "x"),
        ("job", "list", "--state", "bogus"),  # usage errors too: one line, not a box
        ("job", "status"),
        ("job", "frobnicate"),
    ]
    job_id = __import__("json").loads(queued.out)["id"]
    cases.append(("job", "resolve", job_id, "--as", "failed", "--note", "not unknown"))
    for args in cases:
        ran = await run_errand(*args)
        assert ran.code == 2, (args, ran)
        lines = [line for line in ran.err.splitlines() if line.strip()]
        assert len(lines) == 1, (args, ran.err)
        assert lines[0].startswith("error: ")
    assert await pool.fetchval("SELECT count(*) FROM job") == 1
    assert await pool.fetchval("SELECT count(*) FROM event") == before


async def test_submit_from_a_jsonl_file_creates_every_job_once_and_bad_files_change_nothing(
    errand_json: ErrandJson, run_errand: RunErrand, pool: asyncpg.Pool, tmp_path: Any
) -> None:
    """``errand job submit --from FILE.jsonl``: one bulk submit, keys honoured on a repeat; a
    file with one bad line (or bad usage) exits 2 with one line and creates nothing."""
    import json

    good = tmp_path / "jobs.jsonl"
    good.write_text(
        '{"kind": "sleep", "params": {"seconds": 1}, "idempotency_key": "a"}\n'
        "\n"
        '{"kind": "noop", "requester": "ops"}\n'
        '{"kind": "noop", "idempotency_key": "b"}\n'
    )
    first = await errand_json("job", "submit", "--from", str(good), "--json")
    assert first["created"] == 3
    assert [j["created"] for j in first["jobs"]] == [True, True, True]
    again = await errand_json("job", "submit", "--from", str(good), "--json")
    assert again["created"] == 1  # the keyless row is a new job; the keyed ones exist
    assert [j["id"] for j in again["jobs"]][0::2] == [j["id"] for j in first["jobs"]][0::2]
    rows = {
        r["public_id"]: r
        for r in await pool.fetch("SELECT public_id, kind, requester, params FROM job")
    }
    made = [rows[j["id"]] for j in first["jobs"]]
    assert [(r["kind"], r["requester"]) for r in made] == [
        ("sleep", "cli"),
        ("noop", "ops"),
        ("noop", "cli"),
    ]
    assert made[0]["params"] == {"seconds": 1.0}
    assert await pool.fetchval("SELECT count(*) FROM event") == 4  # one creation event each

    bad_lines = [
        '{"kind": "noop"}\n{"kind": "sleep", "params": {"seconds": "soon"}}\n',
        '{"kind": "noop"}\nnot json\n',
        '{"kind": "noop", "colour": "red"}\n',
        '{"kind": "no-such-kind"}\n',
        "\n",
    ]
    cases: list[tuple[str, ...]] = []
    for n, text in enumerate(bad_lines):
        path = tmp_path / f"bad{n}.jsonl"
        path.write_text(text)
        cases.append(("job", "submit", "--from", str(path)))
    cases += [
        ("job", "submit", "--from", str(tmp_path / "missing.jsonl")),
        ("job", "submit", "noop", "--from", str(good)),
        ("job", "submit"),
    ]
    for args in cases:
        ran = await run_errand(*args)
        assert ran.code == 2, (args, ran)
        lines = [line for line in ran.err.splitlines() if line.strip()]
        assert len(lines) == 1, (args, ran.err)
        assert lines[0].startswith("error: ")
    assert await pool.fetchval("SELECT count(*) FROM job") == 4
    assert json.loads((await run_errand("job", "list", "--json")).out)["jobs"]


async def test_migrate_names_what_it_applied_to_an_empty_database_then_nothing(
    server_dsn: str, tmp_path: Any
) -> None:
    """``errand migrate`` on an empty database lists every migration it applied, in order; run
    again it applies none and says so."""
    import uuid

    from jobs.engine.migrate import load
    from tests.support.cli import cli_environment, run_cli
    from tests.support.databases import create_database, drop_database

    name = f"errand_cli_migrate_{uuid.uuid4().hex[:8]}"
    dsn = await create_database(server_dsn, name)
    try:
        env = cli_environment(dsn, tmp_path / "data")
        first = await run_cli(env, "migrate")
        again = await run_cli(env, "migrate")
    finally:
        await drop_database(server_dsn, name)
    names = ", ".join(m.name for m in load())
    assert (first.code, first.out.strip()) == (0, f"migrations up to date (applied {names})")
    assert (again.code, again.out.strip()) == (0, "migrations up to date")
