"""Assets: results and logs that outlive the job (and its cancellation).

Small assets are stored in PostgreSQL (``asset.data``); large ones in a file under
``<data dir>/assets/<job public id>/`` with the path in the row. Writes are fenced by the attempt:
an attempt that lost its lease writes nothing (its file never replaces the current one).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

from jobs.engine.records import read_asset
from jobs.runtime.attempt import Attempt
from jobs.secrets import scrub_bytes

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
    ctx: Attempt,
    assets_dir: Path,
    name: str,
    data: bytes | str,
    content_type: str | None = None,
) -> AssetRef:
    """Store ``data`` as the job's asset ``name`` (replacing one of that name); a large one goes
    to a file under ``assets_dir``.

    Raises:
        ValueError: a bad name (letters, digits, ``._-``; at most 120).
        LeaseLost: this attempt no longer holds the lease; nothing was kept.
    """
    if not _NAME.match(name) or name in {".", ".."}:
        raise ValueError(f"bad asset name {name!r}: use letters, digits, '.', '_' and '-'")
    if isinstance(data, str):
        data, content_type = data.encode(), content_type or "text/plain; charset=utf-8"
    content_type = content_type or "application/octet-stream"
    data = scrub_bytes(data)  # a command's log may print a secret it was given
    size = len(data)
    if size <= INLINE_LIMIT:
        inline = data
        await ctx.write(
            "asset", lambda: ctx.records.asset_put(name, content_type, size, data=inline)
        )
        ctx.log.info("asset.stored", asset=name, size=len(data), in_file=False)
        return AssetRef(name, len(data), None)
    path = assets_dir / ctx.public_id / name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{name}.{ctx.attempt_id}.tmp")
    await asyncio.to_thread(tmp.write_bytes, data)
    try:
        await ctx.write(
            "asset", lambda: ctx.records.asset_put(name, content_type, size, move=(tmp, path))
        )
    finally:
        tmp.unlink(missing_ok=True)
    ctx.log.info("asset.stored", asset=name, size=len(data), in_file=True)
    return AssetRef(name, len(data), path)


__all__ = ["INLINE_LIMIT", "AssetRef", "put_asset", "read_asset"]
