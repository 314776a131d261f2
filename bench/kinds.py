"""Errand kinds of the benchmark (loaded by the worker with ``ERRAND_EXTRA_KINDS=bench.kinds``).

- ``bench_count``: does nothing; reports the first job the process runs (throughput).
- ``bench_probe``: reports its first line (enqueue -> handler start latency).
- ``bench_sleep``: awaits plain ``asyncio.sleep`` (no Errand API) and reports the moment it
  sees the cancel (cancel -> observed latency).
- ``bench_ask``: asks a question and reports the line after the answer (answer -> resume
  latency, bench/waiting.py); asked again by a resumed attempt, it reports ``asked`` again.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel, ConfigDict

from bench.probe import emit, first
from jobs import Context, kind


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


@kind("bench_count", params=NoParams, retry_safe=True)
async def bench_count(ctx: Context, params: NoParams) -> None:
    """Nothing; the first job of the process is reported."""
    first(ctx.public_id)


@kind("bench_probe", params=NoParams)
async def bench_probe(ctx: Context, params: NoParams) -> dict[str, Any]:
    """Report the handler's first line."""
    started = time.monotonic()
    emit("start", ctx.public_id, started)
    return {}


@kind("bench_sleep", params=NoParams)
async def bench_sleep(ctx: Context, params: NoParams) -> None:
    """Sleep with plain asyncio until cancelled; report when the cancel is seen."""
    emit("start", ctx.public_id)
    try:
        await asyncio.sleep(600)
    except asyncio.CancelledError:
        emit("cancelled", ctx.public_id)
        raise


@kind("bench_ask", params=NoParams, retry_safe=True)
async def bench_ask(ctx: Context, params: NoParams) -> None:
    """Ask, and report the handler's next line once the answer came."""
    emit("asked", ctx.public_id)
    await ctx.ask("go", "Go on?")
    emit("answered", ctx.public_id)
