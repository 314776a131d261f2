"""The pgqueuer side of the benchmark: its default worker with the same three handlers.

Run as pgqueuer's users do: ``python -m bench.pgq_worker`` calls ``pgqueuer.run(factory)``, the
function behind its ``pgq run`` CLI, with its defaults (batch size 10, no concurrency cap) on
uvloop when installed, as the CLI does. (``pgq run`` itself stops at start in pgqueuer 1.6.0 with
the typer installed here: its ``--log-level`` parser hands a str where an enum is expected.)
The database is ``BENCH_PGQ_DSN``. Handlers report through :mod:`bench.probe`, like Errand's.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import pgqueuer
from pgqueuer import AsyncpgDriver, Job, PgQueuer
from pgqueuer.models import Context

from bench.probe import emit, first


@asynccontextmanager
async def create() -> AsyncIterator[PgQueuer]:
    """The factory ``pgq run`` enters: one asyncpg connection, as pgqueuer's docs show."""
    conn = await asyncpg.connect(os.environ["BENCH_PGQ_DSN"])
    pgq = PgQueuer(AsyncpgDriver(conn))

    # BENCH_PGQ_LIMIT: the entrypoint's concurrency_limit (bench/fairness.py); 0, its default,
    # is none.
    @pgq.entrypoint("bench_count", concurrency_limit=int(os.environ.get("BENCH_PGQ_LIMIT", "0")))
    async def bench_count(job: Job) -> None:
        first(job.id)

    @pgq.entrypoint("bench_probe")
    async def bench_probe(job: Job) -> None:
        emit("start", job.id)

    @pgq.entrypoint("bench_sleep")
    async def bench_sleep(job: Job, ctx: Context) -> None:
        emit("start", job.id)
        # pgqueuer's cancellation reaches a handler inside its cancel scope.
        with ctx.cancellation:
            try:
                await asyncio.sleep(600)
            except asyncio.CancelledError:
                emit("cancelled", job.id)
                raise

    try:
        yield pgq
    finally:
        await conn.close()


def main() -> None:
    try:
        import uvloop
    except ImportError:  # pgqueuer's CLI falls back the same way
        asyncio.run(pgqueuer.run("bench.pgq_worker:create"))
    else:
        uvloop.run(pgqueuer.run("bench.pgq_worker:create"))


if __name__ == "__main__":
    main()
