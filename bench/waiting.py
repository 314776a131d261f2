"""Jobs that talk back, measured (issue #30): how fast an answer resumes its handler, and what
jobs that wait cost a worker that runs other jobs.

Run on its own for a smoke run: ``python -m bench.waiting --runs 1 --answers 20 --waiting 200
--queued 500``; ``python -m bench.bench_engine`` runs :func:`measure` in each of its runs and
writes the table of :func:`table` into docs/performance.md.

1. **Answer -> resume**: a ``bench_ask`` job asks; from just before ``JobStore.answer`` to the
   handler's next line, as the handler reports it (one ``time.monotonic`` clock for both
   processes). In its worker (``ERRAND_WORKER_PARK_AFTER_SECONDS=60``: the worker is told by
   ``NOTIFY errand_mailbox``) and parked (``0``: the answer queues the job, an idle worker is
   woken, claims it and replays the handler, whose ``ctx.ask`` returns the recorded answer).
   p50 and p99 of ``--answers`` answers, one at a time, 10 ms apart.
2. **Worker RSS** and 3. **claim throughput** with ``--waiting`` jobs waiting against none: the
   waiting jobs are made as a user makes them (``bench_ask`` jobs parked by a worker, each with
   its question and events), then a new ``errand worker`` runs ``--queued`` ``bench_count``
   jobs; jobs/s from its first handler to no job queued or running, and its resident memory
   (``VmRSS``) once they are done.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg

from bench.common import fresh_db, quantile, server_dsn
from bench.harness import (
    ERRAND_WORKER,
    ROOT,
    Figures,
    WorkerProcess,
    compile_errand,
    errand_env,
    errand_pending,
    errand_poller,
    quiet,
)

if TYPE_CHECKING:
    from jobs.ops.app import Engine

PARK_AT_ONCE = {"ERRAND_WORKER_PARK_AFTER_SECONDS": "0"}
WAIT_IN_WORKER = {"ERRAND_WORKER_PARK_AFTER_SECONDS": "60"}


class Errand:
    """Errand on a fresh database, as its users open it (``open_engine``), for one measurement."""

    def __init__(self, engine: Engine, dsn: str, poller: asyncpg.Connection) -> None:
        self.engine, self.dsn, self.store, self.poller = engine, dsn, engine.store, poller

    async def submit_bulk(self, kind: str, n: int) -> None:
        from jobs.engine.store import Submission

        await self.store.submit_many([Submission(kind, {}, "bench", None) for _ in range(n)])

    async def pending(self) -> bool:
        """Whether a job is still queued or running (two probes of the partial indexes)."""
        return await errand_pending(self.poller)

    async def worker(self, log: Path, **env: str) -> WorkerProcess:
        return await WorkerProcess.start(ERRAND_WORKER, errand_env(self.dsn) | env, log)


@asynccontextmanager
async def errand_on(server: str, name: str) -> AsyncIterator[Errand]:
    """Errand open on a fresh database ``name``, its table analyzed as a live one's is."""
    from jobs.ops.app import open_engine
    from jobs.settings import Settings

    dsn = await fresh_db(server, name)
    os.environ.update(errand_env(dsn))
    async with open_engine(Settings()) as engine:
        await engine.pool.execute("ANALYZE")
        poller = await errand_poller(dsn)
        try:
            yield Errand(engine, dsn, poller)
        finally:
            await poller.close()


async def _asked(errand: Errand, public_id: str, *, parked: bool, within: float = 30) -> None:
    """Until the job's question is recorded (and, ``parked``, the job waits for it)."""
    end = time.monotonic() + within
    while not await errand.engine.pool.fetchval(
        "SELECT EXISTS (SELECT 1 FROM job j JOIN job_question q ON q.job_id = j.id"
        " WHERE j.public_id = $1 AND (NOT $2 OR j.state = 'waiting'))",
        public_id,
        parked,
    ):
        if time.monotonic() > end:
            raise TimeoutError(f"job {public_id} asked nothing within {within} s")
        await asyncio.sleep(0.002)


async def answer_latency(server: str, n: int, log: Path, *, parked: bool) -> list[float]:
    """Seconds from just before each answer's write to its handler's next line."""
    from jobs.engine.state import Actor

    async with errand_on(server, "bench_answers") as errand:
        worker = await errand.worker(log, **(PARK_AT_ONCE if parked else WAIT_IN_WORKER))
        out = []
        try:
            for _ in range(n + 5):  # the first five warm the worker and the connections
                job, _ = await errand.store.submit("bench_ask", {}, requester="bench")
                job_id = job.public_id
                await worker.expect("asked", job_id, within=30)
                await _asked(errand, job_id, parked=parked)
                await asyncio.sleep(0.01)  # the worker is idle (parked) or the handler waits
                before = time.monotonic()
                await errand.store.answer(job_id, "yes", actor=Actor.OPERATOR, by="bench")
                out.append(await worker.expect("answered", job_id, within=30) - before)
        finally:
            await worker.stop()
        return out[5:]


def rss_kib(pid: int) -> int:
    """A process's resident memory, KiB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


async def with_waiting(server: str, waiting: int, queued: int, log: Path) -> tuple[float, int]:
    """Jobs/s of a new worker running ``queued`` jobs, and its RSS (KiB) once done, on a
    database where ``waiting`` jobs wait for an answer."""
    async with errand_on(server, "bench_waiting") as errand:
        if waiting:
            await errand.submit_bulk("bench_ask", waiting)
            parker = await errand.worker(log, **PARK_AT_ONCE)
            try:
                while await errand.pending():  # noqa: ASYNC110 - polling the database is the point
                    await asyncio.sleep(0.05)
            finally:
                await parker.stop()
            count = await errand.engine.pool.fetchval(
                "SELECT count(*) FROM job WHERE state = 'waiting' AND current_attempt_id IS NULL"
            )
            assert count == waiting, f"{count} of {waiting} jobs waiting"
        await errand.engine.pool.execute("ANALYZE")
        await errand.submit_bulk("bench_count", queued)
        worker = await errand.worker(log)
        try:
            first = await worker.expect("first", within=120)
            while await errand.pending():  # noqa: ASYNC110
                await asyncio.sleep(0.005)
            done = time.monotonic()
            await asyncio.sleep(0.5)  # its last ends written, its loops idle
            memory = rss_kib(worker.proc.pid)
        finally:
            await worker.stop()
        return queued / (done - first), memory


async def measure(server: str, figures: Figures, args: argparse.Namespace, log: Path) -> None:
    """One run of every figure, added to ``figures``."""
    for parked in (False, True):
        key = "parked" if parked else "worker"
        await quiet(server)
        lat = await answer_latency(server, args.answers, log, parked=parked)
        figures.add(f"answer_{key}_p50", quantile(lat, 0.5) * 1000)
        figures.add(f"answer_{key}_p99", quantile(lat, 0.99) * 1000)
    for waiting in (0, args.waiting):
        await quiet(server)
        rate, memory = await with_waiting(server, waiting, args.queued_with_waiting, log)
        figures.add(f"tp_waiting_{waiting}", rate)
        figures.add(f"rss_waiting_{waiting}", memory / 1024)


def _spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}} – {max(values):{fmt}})"


def table(figures: Figures, args: argparse.Namespace) -> list[str]:
    """The section of docs/performance.md."""
    v = figures.values
    none, many = v["tp_waiting_0"], v[f"tp_waiting_{args.waiting}"]
    rss0, rss1 = v["rss_waiting_0"], v[f"rss_waiting_{args.waiting}"]
    tp_ratio = statistics.median(many) / statistics.median(none)
    rss_ratio = statistics.median(rss1) / statistics.median(rss0)
    return [
        "## Jobs that talk back",
        "",
        "| what | median (min – max) | target |",
        "|---|---|---|",
        f"| answer → handler resumes, waiting in its worker, p50 | "
        f"{_spread(v['answer_worker_p50'], ',.2f')} ms | — |",
        f"| answer → handler resumes, waiting in its worker, p99 | "
        f"{_spread(v['answer_worker_p99'], ',.2f')} ms | — |",
        f"| answer → handler resumes, parked, p50 | "
        f"{_spread(v['answer_parked_p50'], ',.2f')} ms | ≤ 50 ms |",
        f"| answer → handler resumes, parked, p99 | "
        f"{_spread(v['answer_parked_p99'], ',.2f')} ms | — |",
        f"| worker throughput, {args.queued_with_waiting:,} jobs, none waiting | "
        f"{_spread(none, ',.0f')} jobs/s | |",
        f"| the same with {args.waiting:,} jobs waiting | {_spread(many, ',.0f')} jobs/s "
        f"({tp_ratio:.2f}×) | within 5% |",
        f"| worker RSS after them, none waiting | {_spread(rss0, ',.1f')} MiB | |",
        f"| the same with {args.waiting:,} jobs waiting | {_spread(rss1, ',.1f')} MiB "
        f"({rss_ratio:.2f}×) | within 5% |",
        "",
        f"Answers: {args.answers} per run, one at a time, 10 ms apart, on an idle worker; from "
        "just before `JobStore.answer` to the handler's next line (`bench_ask` in bench/kinds.py). "
        "In its worker, the handler is told by `NOTIFY errand_mailbox`; parked, the answer "
        "queues the job, which wakes the idle worker, and a new attempt replays the handler to "
        "its `ctx.ask`, which returns the recorded answer. The waiting jobs are `bench_ask` jobs "
        "parked by a worker (each with its question, its events and an ended attempt); then a "
        "new `errand worker` runs the queued jobs (bench/waiting.py).",
        "",
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument(
        "--queued-with-waiting", type=int, default=5_000, dest="queued_with_waiting"
    )
    args = parser.parse_args()
    compile_errand()
    server = server_dsn()
    log = Path("/tmp/errand-bench-waiting.log")
    figures = Figures()
    for run in range(args.runs):
        print(f"run {run + 1}", flush=True)
        await measure(server, figures, args, log)
    print("\n".join(table(figures, args)))
    print(f"(worker logs: {log}; from {ROOT})")


if __name__ == "__main__":
    from jobs.logs import configure

    configure("warning", "console")
    asyncio.run(main())
