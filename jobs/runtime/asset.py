"""Assets: results and logs that outlive the job (and its cancellation).

Small assets are stored in PostgreSQL (``asset.data``); large ones in a file under
``<data dir>/assets/<job public id>/`` with the path in the row. Writes are fenced by the attempt:
an attempt that lost its lease writes nothing (its file never replaces the current one).
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.engine.queries import q
from jobs.runtime.step import LeaseLost

if TYPE_CHECKING:
    import asyncpg

    from jobs.runtime.context import Context

INLINE_LIMIT = 256 * 1024
"""Assets up to this many bytes live in PostgreSQL; larger ones in a file."""

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,120}$")


@dataclass(frozen=True)
class AssetRef:
    """Where an asset was stored."""

    name: str
    size: int
    path: Path | None  # None: inline in PostgreSQL


async def put_asset(
    ctx: Context, name: str, data: bytes | str, content_type: str | None = None
) -> AssetRef:
    """Store ``data`` as the job's asset ``name`` (replacing one of that name).

    Raises:
        ValueError: a bad name (letters, digits, ``._-``; at most 120).
        LeaseLost: this attempt no longer holds the lease; nothing was kept.
    """
    if not _NAME.match(name) or name in {".", ".."}:
        raise ValueError(f"bad asset name {name!r}: use letters, digits, '.', '_' and '-'")
    if isinstance(data, str):
        data, content_type = data.encode(), content_type or "text/plain; charset=utf-8"
    content_type = content_type or "application/octet-stream"
    path: Path | None = None
    tmp: Path | None = None
    if len(data) > INLINE_LIMIT:
        path = ctx.assets_dir / ctx.public_id / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{name}.{ctx.attempt_id}.tmp")
        await ctx.run_blocking(_write, tmp, data)
    try:
        async with ctx.store.pool.acquire() as conn, conn.transaction():
            # The file takes its place only while this attempt holds the lease (the row lock
            # keeps it from moving meanwhile): a stale attempt must not replace, or remove, the
            # file of the current one.
            if await conn.fetchval(q("job_lock_for_attempt"), ctx.job_id, ctx.attempt_id) is None:
                raise LeaseLost(ctx.public_id)
            if tmp is not None and path is not None:
                os.replace(tmp, path)
            row = await conn.fetchrow(
                q("asset_put"),
                ctx.job_id,
                ctx.attempt_id,
                name,
                content_type,
                len(data),
                None if path else data,
                str(path) if path else None,
            )
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    if row is None:
        raise LeaseLost(ctx.public_id)
    ctx.log.info("asset.stored", asset=name, size=len(data), in_file=path is not None)
    return AssetRef(name, len(data), path)


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


async def read_asset(pool: asyncpg.Pool, job_id: int, name: str) -> bytes:
    """An asset's content. Raises KeyError when the job has no asset of that name."""
    row = await pool.fetchrow(q("asset_get"), job_id, name)
    if row is None:
        raise KeyError(name)
    if row["data"] is not None:
        return bytes(row["data"])
    return await asyncio.to_thread(Path(row["path"]).read_bytes)
