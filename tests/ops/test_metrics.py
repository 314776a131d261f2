"""/healthz, /readyz and /metrics: scraped from a real ``errand worker`` after real jobs, and
from a real ``errand run`` after Discord trouble and deliveries, cancels and a lease expiry."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import asyncpg

import tests.support.kinds  # noqa: F401  (registers crashy, a kind errand run does not run)
from discord_emulator import Emulator
from discord_emulator.testing import World
from jobs.engine.store import JobStore
from jobs.ops import metrics
from jobs.ops.health import HealthServer
from tests.support.cli import WorkerProc, discord_env
from tests.support.http import http_get
from tests.support.polling import poll
from tests.support.rows import expire_lease


async def _count(pool: asyncpg.Pool, sql: str) -> int:
    value: int = await pool.fetchval(sql)
    return value


async def test_worker_metrics_match_the_jobs_it_ran(
    spawn_worker: Callable[..., Awaitable[WorkerProc]], store: JobStore, pool: asyncpg.Pool
) -> None:
    """After 20 noop successes, one demo failure and one sleep still running, the worker's
    /metrics shows exactly those numbers: jobs by state and kind, transitions, durations,
    start latencies, running attempts and the outbox backlog read from the database."""
    # The sleep job still runs when the test ends: SIGTERM would give it the whole shutdown
    # grace (10 s by default) to end on its own before releasing it. Nothing here is about
    # shutdown, so the grace is short.
    worker = await spawn_worker(ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS="0.5")

    async def ready() -> bool:
        return (await http_get(worker.port, "/readyz"))[0] == 200

    await poll(ready, within=30)
    status, body = await http_get(worker.port, "/readyz")
    ready = {"database": "ok", "migrations": "ok", "worker": "ok"}
    assert (status, json.loads(body)["checks"]) == (200, ready)
    for _ in range(20):
        await store.submit("noop", {}, requester="ops")
    failing, _ = await store.submit(
        "demo",
        {"steps": 1, "step_seconds": 0, "fail_at_step": 1},
        requester="ops",
        origin={"channel": "1"},
    )
    sleeping, _ = await store.submit(
        "sleep", {"seconds": 60}, requester="ops", origin={"channel": "1"}
    )

    async def settled() -> bool:
        return (
            await _count(pool, "SELECT count(*) FROM job WHERE state = 'succeeded'") == 20
            and (await store.get(failing.public_id)).state.value == "failed"
            and (await store.get(sleeping.public_id)).state.value == "running"
        )

    await poll(settled, within=30)
    await pool.execute(
        "UPDATE outbox SET dead_at = now(), last_error = 'gone' WHERE id = "
        "(SELECT min(id) FROM outbox)"
    )
    pending = await _count(pool, "SELECT count(*) FROM outbox WHERE dead_at IS NULL")
    assert pending >= 4  # submitted and started, twice; failed once

    status, text = await http_get(worker.port, "/metrics")
    got = metrics.samples(text)
    worker_edge = 'actor="worker",from_state="{}",to_state="{}"'
    expected = {
        "errand_database_up": 1.0,
        'errand_jobs{kind="noop",state="succeeded"}': 20.0,
        'errand_jobs{kind="noop",state="queued"}': 0.0,
        'errand_jobs{kind="demo",state="failed"}': 1.0,
        'errand_jobs{kind="sleep",state="running"}': 1.0,
        "errand_job_transitions_total{" + worker_edge.format("queued", "running") + "}": 22.0,
        "errand_job_transitions_total{" + worker_edge.format("running", "succeeded") + "}": 20.0,
        "errand_job_transitions_total{" + worker_edge.format("running", "failed") + "}": 1.0,
        'errand_job_duration_seconds_count{kind="noop",outcome="succeeded"}': 20.0,
        'errand_job_duration_seconds_count{kind="demo",outcome="failed"}': 1.0,
        'errand_job_start_latency_seconds_count{kind="noop"}': 20.0,
        'errand_attempts_running{kind="sleep"}': 1.0,
        'errand_attempts_running{kind="noop"}': 0.0,
        'errand_outbox_notices{status="pending"}': float(pending),
        'errand_outbox_notices{status="dead"}': 1.0,
        "errand_queue_lag_seconds": 0.0,
    }
    assert status == 200
    assert {k: got.get(k) for k in expected} == expected
    assert 0 < got["errand_outbox_oldest_pending_seconds"] < 60
    # Every noop start came within seconds of its submit.
    assert got['errand_job_start_latency_seconds_bucket{kind="noop",le="10.0"}'] == 20.0


async def test_healthz_answers_and_readyz_names_what_is_not_ready(pool: asyncpg.Pool) -> None:
    """/healthz is 200 while alive; /readyz is 503 naming a failing transport check, and when
    the database is gone it says so without crashing; /metrics then reports database_up 0."""
    server = HealthServer(pool, port=0)

    async def gateway() -> str | None:
        return "gateway disconnected"

    server.add_check("gateway", gateway)
    port = await server.start()
    try:
        status, body = await http_get(port, "/healthz")
        assert (status, json.loads(body)) == (200, {"status": "alive"})
        status, body = await http_get(port, "/readyz")
        assert (status, json.loads(body)["checks"]) == (
            503,
            {"database": "ok", "migrations": "ok", "gateway": "gateway disconnected"},
        )
        await pool.close()
        status, body = await http_get(port, "/readyz")
        checks = json.loads(body)["checks"]
        assert (status, checks["gateway"]) == (503, "gateway disconnected")
        assert "InterfaceError" in checks["database"]
        status, text = await http_get(port, "/metrics")
        assert (status, metrics.samples(text)["errand_database_up"]) == (200, 0.0)
    finally:
        await server.stop()


async def test_queue_lag_counts_the_oldest_due_job(pool: asyncpg.Pool, store: JobStore) -> None:
    """errand_queue_lag_seconds is how long the oldest due queued job has waited."""
    job, _ = await store.submit("noop", {}, requester="ops")
    await pool.execute(
        "UPDATE job SET run_at = now() - interval '90 seconds' WHERE id = $1", job.id
    )
    server = HealthServer(pool, port=0, kinds=["noop"])
    port = await server.start()
    try:
        got = metrics.samples((await http_get(port, "/metrics"))[1])
    finally:
        await server.stop()
    assert 90 <= got["errand_queue_lag_seconds"] < 120
    assert got['errand_jobs{kind="noop",state="queued"}'] == 1.0


async def test_queue_depth_by_kind_and_priority_and_throttled_jobs(
    pool: asyncpg.Pool, store: JobStore
) -> None:
    """errand_queue_depth counts queued jobs by kind, priority and whether they are due;
    errand_jobs_throttled the due ones a paused or capped kind holds back."""
    from datetime import UTC, datetime, timedelta

    from jobs.engine.store import Submission

    await store.submit_many([Submission("noop", {}, "a", priority=5) for _ in range(3)])
    await store.submit("noop", {}, requester="a")
    later = datetime.now(UTC) + timedelta(hours=1)
    await store.submit("sleep", {"seconds": 1}, requester="a", run_at=later)
    await store.submit("sleep", {"seconds": 1}, requester="a")
    await store.pause("noop", by="ops")
    await store.set_limit("sleep", 0)
    server = HealthServer(pool, port=0, kinds=["noop", "sleep"])
    port = await server.start()
    try:
        got = metrics.samples((await http_get(port, "/metrics"))[1])
    finally:
        await server.stop()
    assert got['errand_queue_depth{kind="noop",priority="5",when="due"}'] == 3.0
    assert got['errand_queue_depth{kind="noop",priority="0",when="due"}'] == 1.0
    assert got['errand_queue_depth{kind="sleep",priority="0",when="later"}'] == 1.0
    assert got['errand_jobs_throttled{kind="noop",why="paused"}'] == 4.0
    assert got['errand_jobs_throttled{kind="sleep",why="at its limit"}'] == 1.0


async def test_cancels_and_lease_expiries_are_counted_by_the_process_that_acts(
    emu: Emulator,
    world: World,
    store: JobStore,
    pool: asyncpg.Pool,
    spawn_errand: Callable[..., Awaitable[WorkerProc]],
) -> None:
    """``errand run``: /job cancel on a running job, then again once it has stopped, shows in
    its /metrics as one ``cancelling`` and one ``too_late`` answer; a job whose worker died
    (the test claims it and lets its lease run out) is ended by the process's reaper and counted
    as one lease expiry of its kind."""
    proc = await spawn_errand("run", **discord_env(emu), ERRAND_WORKER_REAPER_SECONDS="0.2")

    async def ready() -> bool:
        return (await http_get(proc.port, "/readyz"))[0] == 200

    await poll(ready, within=30)
    handle = await emu.invoke_slash(
        world.alice,
        world.channel,
        "summon",
        {"task": "long", "kind": "demo", "params": "steps=60 step_seconds=1"},
    )
    job_id = (await handle.wait_original(timeout=10)).content.split("`")[1]

    async def state_is(state: str) -> bool:
        return (await store.get(job_id)).state.value == state

    await poll(lambda: state_is("running"), within=30)
    answers = []
    for wait_for_state in ("cancelled", None):
        cancel = await emu.invoke_slash(world.alice, world.channel, "job cancel", {"id": job_id})
        answers.append((await cancel.wait_original(timeout=10)).content)
        if wait_for_state:
            await poll(lambda: state_is("cancelled"), within=30)
    assert answers[0].startswith("Asked job")
    assert answers[1].startswith("Too late")

    # A worker that died holding a job: the test claims it (a kind this process does not run,
    # so its own worker leaves it alone) and lets the lease run out.
    dead, _ = await store.submit("crashy", {"seconds": 1}, requester="ops")
    [claim] = await store.claim("gone-worker", limit=1, lease_seconds=30, kinds=["crashy"])
    assert claim.public_id == dead.public_id
    await expire_lease(pool, claim.job_id)
    await poll(lambda: _requeued(store, dead.public_id), within=30)

    got = metrics.samples((await http_get(proc.port, "/metrics"))[1])
    assert got['errand_cancels_total{outcome="cancelling"}'] == 1.0
    assert got['errand_cancels_total{outcome="too_late"}'] == 1.0
    assert got.get('errand_cancels_total{outcome="cancelled"}', 0.0) == 0.0
    assert got['errand_lease_expiries_total{kind="crashy"}'] == 1.0


async def _requeued(store: JobStore, public_id: str) -> bool:
    job = await store.get(public_id)
    return job.state.value == "queued" and job.attempts == 1


async def test_discord_and_delivery_counters_move_through_a_real_bot_process(
    emu: Emulator,
    world: World,
    store: JobStore,
    pool: asyncpg.Pool,
    spawn_errand: Callable[..., Awaitable[WorkerProc]],
) -> None:
    """``errand run`` against the emulator: a 429 storm of five on starting the job's thread,
    one 503 on a message post, a job whose channel does not exist (every delivery refused: dead
    letters) and a summoned job delivered to the end. Its /metrics then shows exactly five
    shared-scope 429s, as many rate-limit retries as 429s, one server-error retry, and as many
    delivered and dead-lettered notices (and delivery-lag observations) as the outbox
    records."""
    proc = await spawn_errand(
        "run",
        **discord_env(emu),
        ERRAND_BOT_DELIVERY_MAX_ATTEMPTS="2",
        ERRAND_BOT_DELIVERY_RETRY_BASE_SECONDS="0.1",
        ERRAND_BOT_ANCHOR_WAIT_SECONDS="0.3",
        # The 600 s sleep job still runs when the test ends: a short shutdown grace, or
        # SIGTERM waits the default 10 s for it before releasing it (not what this tests).
        ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS="0.5",
    )

    async def ready() -> bool:
        return (await http_get(proc.port, "/readyz"))[0] == 200

    await poll(ready, within=30)
    emu.faults.ratelimit_next(5, path_contains="/threads", method="POST")
    emu.faults.fail_next(503, 1, path_contains="/messages", method="POST")
    nowhere, _ = await store.submit(
        "sleep",
        {"seconds": 600},
        requester="discord:1",
        origin={"transport": "discord", "channel_id": "1", "channel_type": 0, "user_id": "1"},
    )
    handle = await emu.invoke_slash(
        world.alice,
        world.channel,
        "summon",
        {"task": "count", "kind": "demo", "params": "steps=3 step_seconds=0.3"},
    )
    await handle.wait_original(timeout=10)

    async def settled() -> bool:
        row = await pool.fetchrow(
            "SELECT count(*) FILTER (WHERE o.dead_at IS NOT NULL AND j.id = $1) AS dead, "
            "count(*) FILTER (WHERE o.delivered_at IS NULL AND o.dead_at IS NULL "
            "AND j.id <> $1) AS waiting, "
            "bool_and(j.state = 'succeeded') FILTER (WHERE j.id <> $1) AS done "
            "FROM outbox o JOIN job j ON j.id = o.job_id",
            nowhere.id,
        )
        return bool(row["dead"] >= 2 and row["waiting"] == 0 and row["done"])

    await poll(settled, within=60)
    delivered, dead = await pool.fetchrow(
        "SELECT count(*) FILTER (WHERE delivered_at IS NOT NULL), "
        "count(*) FILTER (WHERE dead_at IS NOT NULL) FROM outbox"
    )
    got = metrics.samples((await http_get(proc.port, "/metrics"))[1])

    def total(name: str) -> float:
        return sum(v for k, v in got.items() if k.startswith(name + "{") or k == name)

    assert [m for _, _, m in emu.faults.triggered].count(429) == 5
    assert got['errand_discord_rate_limits_total{scope="shared"}'] == 5.0
    assert got['errand_discord_retries_total{reason="rate_limit"}'] == total(
        "errand_discord_rate_limits_total"
    )
    assert got['errand_discord_retries_total{reason="server_error"}'] == 1.0
    assert delivered > 0
    assert dead >= 2
    assert total("errand_notices_delivered_total") == delivered
    assert got["errand_notice_delivery_lag_seconds_count"] == delivered
    assert 0 < got["errand_notice_delivery_lag_seconds_sum"] < 60 * delivered
    assert total("errand_notices_dead_lettered_total") == dead
    assert got['errand_outbox_notices{status="dead"}'] == dead


async def test_readyz_never_shows_a_secret_from_a_failing_check(pool: asyncpg.Pool) -> None:
    """A check failing with a DSN or token in its message is reported scrubbed."""
    server = HealthServer(pool, port=0)

    async def leaky() -> str | None:
        raise OSError("cannot reach postgresql://errand:hunter2@db:5432/errand token=abc.def")

    server.add_check("leaky", leaky)
    port = await server.start()
    try:
        status, body = await http_get(port, "/readyz")
    finally:
        await server.stop()
    assert status == 503
    assert "hunter2" not in body
    assert "abc.def" not in body
    assert json.loads(body)["checks"]["leaky"].startswith("OSError: cannot reach postgresql://")
