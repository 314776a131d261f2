"""Discord bot benchmarks against the emulator; prints figures (no assertions).

Run: ``.venv/bin/python -m bench.bench_bot [--jobs 100]`` (``DATABASE_URL`` or an embedded
PostgreSQL). Everything is real: the discord.py bot (``bot.client.ErrandBot``) with its production
pacing (one edit per second per message, 45 requests/s), an in-process worker, the emulator with
Discord's rules (rate-limit windows 100x shorter, as in the tests, so the run takes seconds).

1. Ack latency: /summon sent by the emulator -> the interaction's answer (which carries the job
   id), p50/p99: one at a time on an idle bot, then for jobs summoned all at once.
2. Edits per job: versions of each progress message after the post, until its terminal state.
3. Terminal-edit delay: the job's ``finished_at`` (database clock) -> the emulator receiving the
   edit that shows the terminal state (same host clock), p50/p99/max.
4. 429s seen, by route.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
import warnings
from collections import Counter
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord  # noqa: F401  (imported quietly: discord.py imports audioop)

from bench.common import fresh_db, quantile, server_dsn
from bot.client import ErrandBot
from bot.settings import BotSettings
from discord_emulator import Emulator
from discord_emulator.testing import fast_config, make_world, running_bot
from jobs.engine.db import create_pool
from jobs.engine.store import JobStore
from jobs.kinds import default_registry
from jobs.runtime.worker import Worker
from jobs.settings import WorkerSettings

STATE = re.compile(r"\*\*(succeeded|failed|cancelled)\*\*")
JOB_ID = re.compile(r"Job `([a-z0-9]+)`")


async def run(jobs: int, steps: int, step_seconds: float, sequential: int) -> None:
    dsn = await fresh_db(server_dsn(), "errand_bench_bot")
    pool = await create_pool(dsn, min_size=2, max_size=20)
    registry = default_registry()
    store = JobStore(pool, registry)
    settings = BotSettings(
        _env_file=None,
        token=None,
        dev_guild=None,  # type: ignore[call-arg]
        default_kind="demo",
        guild_ready_timeout=0.05,
    )
    async with Emulator(fast_config()) as emu:
        world = make_world(emu)
        bot = ErrandBot(store=store, dsn=dsn, settings=settings, registry=registry)
        worker = Worker(store, registry, WorkerSettings(poll_seconds=0.1), dsn=dsn)
        stop = asyncio.Event()
        terminal_seen: dict[int, float] = {}
        events = emu.subscribe()

        async def watch() -> None:
            async for ev in events:
                if ev.kind == "message_update" and STATE.search(str(ev.data.get("content"))):
                    terminal_seen.setdefault(int(ev.data["id"]), time.time())

        watcher = asyncio.create_task(watch())
        async with running_bot(emu, bot):
            worker_task = asyncio.create_task(worker.run(stop))

            async def summon(n: int) -> tuple[str, float]:
                t0 = time.perf_counter()
                handle = await emu.invoke_slash(
                    world.alice,
                    world.channel,
                    "summon",
                    {"task": f"bench {n}", "params": f"steps={steps} step_seconds={step_seconds}"},
                )
                answer = await handle.wait_original(timeout=30)
                match = JOB_ID.search(answer.content)
                assert match, answer.content
                return match[1], time.perf_counter() - t0

            # One at a time first: the answer latency of an idle bot.
            single = []
            for n in range(sequential):
                t0 = time.perf_counter()
                handle = await emu.invoke_slash(
                    world.alice, world.channel, "summon", {"task": f"one {n}", "params": "steps=0"}
                )
                await handle.wait_original(timeout=30)
                single.append(time.perf_counter() - t0)
            # Let their deliveries finish, so the burst below starts from a quiet bot.
            while sequential and await pool.fetchval(  # noqa: ASYNC110 - polling the DB
                "SELECT count(*) FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL"
            ):
                await asyncio.sleep(0.1)

            t_start = time.perf_counter()
            results = await asyncio.gather(*(summon(n) for n in range(jobs)))
            ids = [r[0] for r in results]
            acks = [r[1] for r in results]

            async def bindings() -> list[Any]:
                return list(
                    await pool.fetch(
                        "SELECT j.public_id, j.finished_at, b.progress_message_id::bigint AS mid "
                        "FROM job j JOIN discord_binding b ON b.job_id = j.id "
                        "WHERE j.public_id = ANY($1)",
                        ids,
                    )
                )

            while True:
                rows = await bindings()
                if len(rows) == jobs and all(
                    r["mid"] in terminal_seen
                    or (r["mid"] and STATE.search(emu.message(r["mid"]).content))
                    for r in rows
                ):
                    break
                if time.perf_counter() - t_start > 600:
                    raise TimeoutError("jobs did not all reach a terminal display")
                await asyncio.sleep(0.1)
            wall = time.perf_counter() - t_start
            stop.set()
            await worker_task
        events.close()
        watcher.cancel()
        delays = [
            terminal_seen[r["mid"]] - r["finished_at"].timestamp()
            for r in rows
            if r["mid"] in terminal_seen
        ]
        edits = [len(emu.message(r["mid"]).versions) - 1 for r in rows]
        limited = Counter(r.route or r.path for r in emu.request_log(status=429))
    await pool.close()

    print(
        f"jobs: {jobs} summoned at once in one channel, demo steps={steps} "
        f"step_seconds={step_seconds}; all terminal after {wall:.1f} s"
    )
    if single:
        print(
            f"ack latency, one at a time ({len(single)}): "
            f"p50 {quantile(single, 0.5) * 1000:.0f} ms, "
            f"p99 {quantile(single, 0.99) * 1000:.0f} ms"
        )
    print(
        f"ack latency, all at once: p50 {quantile(acks, 0.5) * 1000:.0f} ms, "
        f"p99 {quantile(acks, 0.99) * 1000:.0f} ms, max {max(acks) * 1000:.0f} ms"
    )
    print(
        f"edits per job: mean {sum(edits) / len(edits):.1f}, min {min(edits)}, "
        f"max {max(edits)} (progress is written by the worker at most 2/s, "
        "the bot edits at most 1/s per message)"
    )
    if delays:
        print(
            f"terminal-edit delay: p50 {quantile(delays, 0.5) * 1000:.0f} ms, "
            f"p99 {quantile(delays, 0.99) * 1000:.0f} ms, max {max(delays) * 1000:.0f} ms "
            f"({len(delays)} jobs)"
        )
    print(f"429s by route: {dict(limited) or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--step-seconds", type=float, default=0.5)
    parser.add_argument(
        "--sequential",
        type=int,
        default=50,
        help="jobs summoned one at a time first (ack latency when idle)",
    )
    args = parser.parse_args()
    asyncio.run(run(args.jobs, args.steps, args.step_seconds, args.sequential))


if __name__ == "__main__":
    main()
