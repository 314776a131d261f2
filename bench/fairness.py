"""Fair share and fleet-wide limits, measured (issue 31): ``bench.bench_engine`` runs these in
its runs, beside the plain figures, and adds their table to docs/performance.md.

1. Worker throughput with fair share and a per-kind limit on: ``--queued`` jobs from
   :data:`REQUESTERS` requesters (interleaved, so every claim reads several lanes), the kind's
   limit set with ``errand kind limit`` to :data:`LIMIT`, above the worker's 100 slots (so it
   is counted on every claim, without binding). Compared with the plain figure of the same
   run (one requester, no limit) and with pgqueuer's.
2. pgqueuer's ``concurrency_limit`` entrypoint (the same :data:`LIMIT`), same measure.
3. Enqueue -> handler start p50 with 10,000 jobs of another requester queued, against an empty
   queue, on the same worker: ``ERRAND_WORKER_RUNNING_PER_REQUESTER=1``, Alice's one job
   sleeping holds her share, her backlog waits behind it, and each of Bob's probes must be
   found past it by the claim.

It takes the harness from ``bench_engine`` as an argument rather than importing it, so the two
modules do not import each other. A smoke run: ``python -m bench.bench_engine --runs 1
--no-write --submits 200 --concurrent 200 --callers 4 --bulk 500 --queued 500 --samples 20
--cancels 10 --backlog 500``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.common import quantile

REQUESTERS = 4
LIMIT = 1000


@dataclass
class FairFigures:
    """Every sample of the fairness measurements, by measurement."""

    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, value: float) -> None:
        self.values.setdefault(key, []).append(value)


async def _drain(system: Any, worker: Any, n: int) -> float:
    """Jobs/s from the first handler start until nothing is queued or running."""
    try:
        first = await worker.expect("first", within=120)
        while await system.pending():  # noqa: ASYNC110 - polling the database is the point
            await asyncio.sleep(0.005)
        done = time.monotonic()
    finally:
        await worker.stop()
    return float(n / (done - first))


async def fair_throughput(h: ModuleType, server: str, n: int, log: Path) -> float:
    """Errand, fair share over :data:`REQUESTERS` requesters and a kind limit above its slots."""
    from jobs.engine.store import Submission

    errand = h.Errand()
    async with h.opened(errand, server, "bench_fair_tp"):
        await errand.store.set_limit("bench_count", LIMIT)
        await errand.store.submit_many(
            [Submission("bench_count", {}, f"bench{i % REQUESTERS}", h.ORIGIN) for i in range(n)]
        )
        return await _drain(errand, await errand.worker(log), n)


async def limited_pgqueuer_throughput(h: ModuleType, server: str, n: int, log: Path) -> float:
    """pgqueuer's default worker with its entrypoint's ``concurrency_limit`` at :data:`LIMIT`."""
    pgq = h.Pgqueuer()
    async with h.opened(pgq, server, "bench_tp") as dsn:
        await pgq.submit_bulk("bench_count", n)
        env = h.pgq_env(dsn) | {"BENCH_PGQ_LIMIT": str(LIMIT)}
        return await _drain(pgq, await h.WorkerProcess.start(h.PGQ_WORKER, env, log), n)


async def _probes(errand: Any, worker: Any, n: int, origin: dict[str, str]) -> list[float]:
    out = []
    for _ in range(n):
        before = time.monotonic()
        job, _ = await errand.store.submit("bench_probe", {}, requester="bob", origin=origin)
        out.append(await worker.expect("start", job.public_id, within=30) - before)
        await asyncio.sleep(0.01)
    return out


async def backlog_latency(
    h: ModuleType, server: str, backlog: int, samples: int, log: Path
) -> tuple[list[float], list[float]]:
    """Enqueue -> start of Bob's probes on an empty queue, then with Alice's backlog queued."""
    from jobs.engine.store import Submission

    errand = h.Errand()
    async with h.opened(errand, server, "bench_backlog") as dsn:
        await errand.analyze()
        env = h.errand_env(dsn) | {"ERRAND_WORKER_RUNNING_PER_REQUESTER": "1"}
        worker = await h.WorkerProcess.start(h.ERRAND_WORKER, env, log)
        try:
            warm, _ = await errand.store.submit("bench_probe", {}, requester="bob")
            await worker.expect("start", warm.public_id, within=60)
            await asyncio.sleep(0.5)
            empty = await _probes(errand, worker, samples, h.ORIGIN)
            held, _ = await errand.store.submit("bench_sleep", {}, requester="alice")
            await worker.expect("start", held.public_id, within=30)
            await errand.store.submit_many(
                [Submission("bench_sleep", {}, "alice", h.ORIGIN) for _ in range(backlog)]
            )
            await errand.analyze()  # as a live install's statistics would know the backlog
            await asyncio.sleep(0.5)
            behind = await _probes(errand, worker, samples, h.ORIGIN)
            await errand.store.cancel(held.public_id, by="bench")
        finally:
            await worker.stop()
        return empty, behind


async def measure(
    h: ModuleType, server: str, queued: int, backlog: int, samples: int, log: Path
) -> FairFigures:
    """One run of every fairness measurement, with the harness ``h`` (the ``bench_engine``
    module that calls it: its systems, worker processes and fresh databases)."""
    out = FairFigures()
    await h.quiet(server)
    out.add("fair_tp", await fair_throughput(h, server, queued, log))
    await h.quiet(server)
    out.add("pgq_limited_tp", await limited_pgqueuer_throughput(h, server, queued, log))
    await h.quiet(server)
    empty, behind = await backlog_latency(h, server, backlog, samples, log)
    out.add("empty_p50", quantile(empty, 0.5) * 1000)
    out.add("backlog_p50", quantile(behind, 0.5) * 1000)
    return out


def merge(into: FairFigures, run: FairFigures) -> None:
    for key, values in run.values.items():
        for v in values:
            into.add(key, v)


def section(fair: FairFigures, plain: dict[str, list[float]], pgq: dict[str, list[float]],
            queued: int, backlog: int) -> str:  # fmt: skip
    """The fairness table of docs/performance.md: the medians and the two ratios asked of them."""
    f = {k: statistics.median(v) for k, v in fair.values.items()}
    plain_tp = statistics.median(plain[f"tp{queued}"]) if f"tp{queued}" in plain else None
    pgq_tp = statistics.median(pgq[f"tp{queued}"]) if f"tp{queued}" in pgq else None
    rows = [
        "## Fair share and limits",
        "",
        f"Measured by `bench/fairness.py` in the same runs. Throughput: {queued:,} jobs queued "
        f"from {REQUESTERS} requesters, interleaved, with `errand kind limit bench_count "
        f"{LIMIT}` (above the worker's 100 slots: counted on every claim, never binding). "
        f"Latency: enqueue -> handler start of one requester's probes with "
        f"ERRAND_WORKER_RUNNING_PER_REQUESTER=1, on an empty queue and with {backlog:,} jobs "
        "of another requester queued behind that requester's one running job.",
        "",
        "| what | figure | against | ratio | target |",
        "|---|---|---|---|---|",
    ]
    if plain_tp is not None:
        rows.append(
            f"| throughput, fair share + kind limit | {f['fair_tp']:,.0f} jobs/s | plain claim "
            f"{plain_tp:,.0f} jobs/s | {f['fair_tp'] / plain_tp:.2f}× | ≥ 0.9× |"
        )
    if pgq_tp is not None:
        rows.append(
            f"| throughput, fair share + kind limit | {f['fair_tp']:,.0f} jobs/s | pgqueuer "
            f"{pgq_tp:,.0f} jobs/s | {f['fair_tp'] / pgq_tp:.2f}× | ≥ 1.5× |"
        )
    rows += [
        f"| pgqueuer, `concurrency_limit={LIMIT}` entrypoint | "
        f"{f['pgq_limited_tp']:,.0f} jobs/s | Errand fair + limit | "
        f"{f['fair_tp'] / f['pgq_limited_tp']:.2f}× | — |",
        f"| enqueue → start p50, {backlog:,} of another requester's jobs queued | "
        f"{f['backlog_p50']:.2f} ms | empty queue {f['empty_p50']:.2f} ms | "
        f"{f['backlog_p50'] / f['empty_p50']:.2f}× | ≤ 1.2× |",
        "",
    ]
    return "\n".join(rows)
