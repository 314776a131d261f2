"""Sharded bot under load, on the emulator with Discord's own limits; prints figures.

Run: ``python -m bench.bench_shards [--guilds 1000] [--jobs 10000] [--minutes 5]``
(``DATABASE_URL`` or an embedded PostgreSQL). Everything is real and runs with default
settings: two ``errand bot`` processes (shards 0,1 and 2,3 of 4), one ``errand worker``, the
emulator with Discord's real windows (global 50 requests/s per bot token, per-route buckets,
thread creation paced per channel, 5 s between IDENTIFYs per bucket).

1. Burst: 100 jobs summoned in one channel within one second; each job's queued state is
   visible to its requester when its /summon answer arrives. They end together: terminal
   state visible = the job's ``finished_at`` (database clock) -> the first edit that shows it,
   on the answer or on the progress message (same host clock).
2. Load: ``--jobs`` jobs over ``--minutes`` in ``--guilds`` guilds spread over the 4 shards;
   halfway, the process of shards 2,3 is SIGKILLed and started again 5 s later. Ack latency,
   time until the queued and the terminal state are visible, 429s (and whether each was
   retried), notices per job (duplicates, lost).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import signal
import sys
import time
import warnings
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord  # noqa: F401  (imported quietly: discord.py imports audioop)

from bench.common import fresh_db, quantile, server_dsn
from discord_emulator import Channel, Emulator, EmulatorConfig, User
from jobs.engine.db import create_pool

SHARDS = 4
ENTRY = "from bot.cli import main; main()"
TERMINAL = re.compile(r"\*\*(succeeded|failed|cancelled)\*\*")
JOB_ID = re.compile(r"Job `([a-z0-9]+)`")


@dataclass
class Job:
    public_id: str
    channel: Channel
    answer_id: int
    summoned: float
    acked: float


@dataclass
class Run:
    emu: Emulator
    dsn: str
    user: User
    jobs: list[Job] = field(default_factory=list)
    unanswered: int = 0
    terminal_seen: dict[int, float] = field(default_factory=dict)


def env_for(run: Run, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISCORD_", "ERRAND_"))}
    assert run.emu.application is not None
    env.update(
        DATABASE_URL=run.dsn,
        DISCORD_TOKEN=run.emu.application.token,
        ERRAND_DATA_DIR=str(data_dir),
        ERRAND_DISCORD_API_BASE=run.emu.api_base,
        ERRAND_DISCORD_GATEWAY_URL=run.emu.gateway_url,
        ERRAND_BOT_DEFAULT_KIND="demo",
        ERRAND_LOG_LEVEL="warning",
    )
    return env


async def start(run: Run, args: list[str], data_dir: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        ENTRY,
        *args,
        env=env_for(run, data_dir),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def start_bot(run: Run, ids: list[int], data_dir: Path) -> asyncio.subprocess.Process:
    proc = await start(
        run,
        ["bot", "--shard-ids", ",".join(map(str, ids)), "--shard-count", str(SHARDS)],
        data_dir,
    )
    want = {(i, SHARDS) for i in ids}
    deadline = time.monotonic() + 120
    while not want <= {s.shard for s in run.emu.gateway.sessions.values() if s.connection}:
        if time.monotonic() > deadline:
            raise TimeoutError(f"shards {ids} did not connect")
        await asyncio.sleep(0.1)
    return proc


async def summon(run: Run, channel: Channel, n: int, params: str) -> Job | None:
    t0 = time.time()
    try:
        handle = await run.emu.invoke_slash(
            run.user, channel, "summon", {"task": f"load {n}", "params": params}
        )
        answer = await handle.wait_original(timeout=30)
    except (TimeoutError, LookupError):
        run.unanswered += 1  # e.g. its shard's process was down: Discord shows a failure
        return None
    match = JOB_ID.search(answer.content)
    if match is None:
        run.unanswered += 1
        return None
    job = Job(match[1], channel, answer.id, t0, time.time())
    run.jobs.append(job)
    return job


async def watch(run: Run) -> None:
    async for ev in run.emu.subscribe(maxsize=1_000_000):
        if ev.kind == "message_update" and TERMINAL.search(str(ev.data.get("content"))):
            run.terminal_seen.setdefault(int(ev.data["id"]), time.time())


async def settle(run: Run, jobs: list[Job], limit: float) -> float:
    """Wait until every job is finished and its outbox delivered; returns the seconds waited."""
    pool = await create_pool(run.dsn, min_size=1, max_size=2)
    t0 = time.monotonic()
    ids = [j.public_id for j in jobs]
    try:
        while time.monotonic() - t0 < limit:
            left = await pool.fetchval(
                "SELECT count(*) FROM job j WHERE j.public_id = ANY($1) AND (j.finished_at IS NULL"
                " OR EXISTS (SELECT 1 FROM outbox o WHERE o.job_id = j.id"
                " AND o.delivered_at IS NULL AND o.dead_at IS NULL))",
                ids,
            )
            if left == 0:
                break
            await asyncio.sleep(0.5)
        return time.monotonic() - t0
    finally:
        await pool.close()


async def figures(run: Run, jobs: list[Job], label: str) -> dict[str, Any]:
    pool = await create_pool(run.dsn, min_size=1, max_size=2)
    try:
        rows = await pool.fetch(
            "SELECT j.public_id, j.state::text AS state, j.finished_at, b.thread_id,"
            " b.progress_message_id FROM job j LEFT JOIN discord_binding b ON b.job_id = j.id"
            " WHERE j.public_id = ANY($1)",
            [j.public_id for j in jobs],
        )
        dead = await pool.fetch(
            "SELECT o.last_error, count(*) AS n FROM outbox o JOIN job j ON j.id = o.job_id"
            " WHERE j.public_id = ANY($1) AND o.dead_at IS NOT NULL GROUP BY o.last_error",
            [j.public_id for j in jobs],
        )
    finally:
        await pool.close()
    by_id = {r["public_id"]: r for r in rows}
    acks = [j.acked - j.summoned for j in jobs]
    visible_terminal: list[float] = []
    via_answer = 0
    notices: Counter[int] = Counter()
    for job in jobs:
        row = by_id[job.public_id]
        seen = [
            run.terminal_seen[m]
            for m in (job.answer_id, int(row["progress_message_id"] or 0))
            if m in run.terminal_seen
        ]
        if row["finished_at"] is not None and seen:
            visible_terminal.append(min(seen) - row["finished_at"].timestamp())
            via_answer += job.answer_id in run.terminal_seen
        if row["thread_id"]:
            count = sum(
                1
                for m in run.emu.history(int(row["thread_id"]))
                if m.content.startswith("<@") and not m.deleted
            )
            notices[count] += 1
        else:
            notices[-1] += 1
    return {
        "label": label,
        "jobs": len(jobs),
        "ack": acks,
        "terminal": visible_terminal,
        "not_seen_terminal": len(jobs) - len(visible_terminal),
        "via_answer": via_answer,
        "notices": notices,
        "dead": {str(r["last_error"])[:80]: r["n"] for r in dead},
    }


def ms(values: list[float], q: float) -> str:
    return f"{quantile(values, q) * 1000:.0f} ms" if values else "n/a"


def report(result: dict[str, Any]) -> None:
    out(f"-- {result['label']}: {result['jobs']} jobs")
    out(
        f"   queued visible (ack): p50 {ms(result['ack'], 0.5)}, p99 {ms(result['ack'], 0.99)},"
        f" max {ms(result['ack'], 1.0)}"
    )
    out(
        f"   terminal visible after finish: p50 {ms(result['terminal'], 0.5)}, "
        f"p99 {ms(result['terminal'], 0.99)}, max {ms(result['terminal'], 1.0)};"
        f" never seen: {result['not_seen_terminal']}; shown on the answer: {result['via_answer']}"
    )
    if result["dead"]:
        out(f"   dead-lettered outbox rows: {result['dead']}")
    n = result["notices"]
    out(
        f"   notices per job: one {n[1]}, duplicates {sum(v for k, v in n.items() if k > 1)},"
        f" lost {n[0]}, no thread {n[-1]}"
    )


def rate_limits(emu: Emulator) -> None:
    log = list(emu.requests)
    last_ok: dict[tuple[str, str], float] = {}
    for r in log:
        if r.status < 400:
            key = (r.method, r.path)
            last_ok[key] = max(last_ok.get(key, 0.0), r.at)
    limited = [r for r in log if r.status == 429]
    # retried: a later request to the same route and path succeeded
    unretried = sum(1 for r in limited if last_ok.get((r.method, r.path), 0.0) <= r.at)
    by_route = Counter(r.route or r.path for r in limited)
    out(f"-- 429s: {len(limited)} (unretried: {unretried}); by route: {dict(by_route)}")
    out(f"   requests answered by the emulator: {len(log)}")


async def main(guilds: int, jobs: int, minutes: float, steps: int) -> None:
    dsn = await fresh_db(server_dsn(), "errand_bench_shards")
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"errand-bench-shards-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    async with Emulator(EmulatorConfig()) as emu:
        emu.requests = deque(maxlen=5_000_000)  # keep every request of the run for the 429 count
        app = emu.create_application("Errand")
        user = emu.create_user("alice")
        channels = []
        for g in range(guilds):
            guild = emu.create_guild(f"guild {g}", shard=(g % SHARDS, SHARDS))
            emu.add_member(guild, user)
            channels.append(emu.create_channel(guild, "general"))
        assert app.token
        run = Run(emu, dsn, user)
        watcher = asyncio.create_task(watch(run))
        worker = await start(run, ["worker"], tmp / "worker")
        bot_a = await start_bot(run, [0, 1], tmp / "a")
        bot_b = await start_bot(run, [2, 3], tmp / "b")
        try:
            # 1. Burst in one channel: 100 summons within one second, ending together.
            burst_channel = channels[0]
            burst = await asyncio.gather(
                *(
                    _later(n * 0.01, summon(run, burst_channel, n, "steps=1 step_seconds=3"))
                    for n in range(100)
                )
            )
            burst_jobs = [j for j in burst if j is not None]
            waited = await settle(run, burst_jobs, 600)
            out(f"burst delivered (threads, notices) after {waited:.0f} s")
            report(await figures(run, burst_jobs, "100 summoned in one channel within 1 s"))

            # 2. Load over many guilds with a process killed halfway.
            period = minutes * 60
            load_jobs: list[Job | None] = []
            t_start = time.monotonic()
            killed = False
            tasks: list[asyncio.Task[Job | None]] = []
            for n in range(jobs):
                at = t_start + n * period / jobs
                delay = at - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                if not killed and n >= jobs // 2:
                    killed = True
                    bot_b.send_signal(signal.SIGKILL)
                    await bot_b.wait()
                    asyncio.get_running_loop().call_later(
                        5, lambda: tasks.append(asyncio.create_task(_restart(run, tmp)))
                    )
                channel = random.choice(channels)
                tasks.append(
                    asyncio.create_task(summon(run, channel, n, f"steps={steps} step_seconds=1"))
                )
            for task in list(tasks):
                result = await task
                if isinstance(result, Job):
                    load_jobs.append(result)
            done = [j for j in load_jobs if j is not None]
            waited = await settle(run, done, 3600)
            out(
                f"load: {jobs} summoned over {minutes:g} min in {guilds} guilds; "
                f"unanswered (shard down): {run.unanswered}; all delivered {waited:.0f} s later"
            )
            report(await figures(run, done, "load"))
            rate_limits(emu)
        finally:
            for proc in (bot_a, bot_b, worker, *_restarted):
                if proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in (bot_a, bot_b, worker, *_restarted):
                await proc.wait()
            watcher.cancel()


_restarted: list[asyncio.subprocess.Process] = []
_lines: list[str] = []
DOC = Path(__file__).resolve().parent.parent / "docs" / "performance-discord.md"


def out(line: str) -> None:
    """Print a figure and keep it for docs/performance-discord.md."""
    print(line, flush=True)
    _lines.append(line)


def write_doc(args: argparse.Namespace) -> None:
    """docs/performance-discord.md, from this run's figures (never edited by hand)."""
    import importlib.metadata as md
    import platform

    load = os.getloadavg()
    header = [
        "# Discord delivery under load (generated)",
        "",
        "Written by `python -m bench.bench_shards` "
        f"(`--guilds {args.guilds} --jobs {args.jobs} --minutes {args.minutes:g}"
        f" --steps {args.steps}`); do not edit by hand.",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- python {platform.python_version()}, discord.py {md.version('discord.py')},"
        f" asyncpg {md.version('asyncpg')}; {os.cpu_count()} cores;"
        f" load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}",
        "- the emulator with Discord's own windows: 50 requests/s per bot token,"
        " per-route buckets, thread creation paced per channel; two `errand bot` processes"
        " (shards 0,1 and 2,3 of 4) and one `errand worker`, default settings",
        "",
        "```",
    ]
    DOC.write_text("\n".join([*header, *_lines, "```", ""]))


async def _restart(run: Run, tmp: Path) -> None:
    _restarted.append(await start_bot(run, [2, 3], tmp / "b2"))


async def _later(delay: float, coro: Any) -> Any:
    await asyncio.sleep(delay)
    return await coro


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--guilds", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--no-doc", action="store_true", help="print only")
    a = parser.parse_args()
    asyncio.run(main(a.guilds, a.jobs, a.minutes, a.steps))
    if not a.no_doc:
        write_doc(a)
