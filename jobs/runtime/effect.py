"""Guarded side effects: done at most once per job, or declared ``unknown``, never silently twice.

``await ctx.effect(key, do, lookup=None)`` records the *intent* (job, attempt, stable key) before
calling ``do`` and the *outcome* after, each fenced by the attempt's lease. On a later attempt:

- ``done``: the stored outcome is returned and ``do`` is not called again;
- ``failed`` (``do`` raised): the effect is tried again;
- ``intent`` (a worker died between the two writes): the outcome is in doubt. With ``lookup``,
  ``await lookup(key)`` asks the outside world: an outcome means it happened (recorded as done),
  ``None`` means it did not (``do`` runs). Without ``lookup`` the attempt ends and the job becomes
  ``unknown`` for a person to resolve (the reaper does the same when the lease of an attempt with
  a blind effect in flight expires). If a person resolved the job as a retry after the intent was
  recorded, they took responsibility: the effect runs again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from jobs.engine.queries import q
from jobs.runtime.step import LeaseLost
from jobs.secrets import scrub

if TYPE_CHECKING:
    from jobs.runtime.context import Context

Do = Callable[[], Awaitable[Any]]
Lookup = Callable[[str], Awaitable[Any]]


class EffectInDoubt(Exception):
    """An earlier attempt may have done this effect and nothing can tell: the job is unknown."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(
            f"effect {key!r} was in flight when an earlier attempt ended and has no lookup; "
            "its outcome is unknown"
        )


async def run_effect(ctx: Context, key: str, do: Do, lookup: Lookup | None = None) -> Any:
    """Do ``do`` at most once for this job under ``key``; see the module docstring.

    Raises:
        JobCancelled: a stop was requested before the effect started (no new effect starts).
        EffectInDoubt: a previous intent has no recorded outcome and no ``lookup``.
        LeaseLost: this attempt no longer holds the lease; nothing was done.
    """
    ctx.checkpoint()
    pool = ctx.store.pool
    async with pool.acquire() as conn, conn.transaction():
        if await conn.fetchval(q("job_lock_for_attempt"), ctx.job_id, ctx.attempt_id) is None:
            raise LeaseLost(ctx.public_id)
        row = await conn.fetchrow(q("effect_get"), ctx.job_id, key)
        if row is not None and row["status"] == "done":
            ctx.log.info("effect.already_done", key=key)
            return row["outcome"]
        in_doubt = row is not None and row["status"] == "intent"
        if (
            row is not None
            and in_doubt
            and await conn.fetchval(q("event_resolved_retry_since"), ctx.job_id, row["created_at"])
        ):
            in_doubt = False  # a person resolved the doubt as "do it again"
        if in_doubt and lookup is None:
            raise EffectInDoubt(key)
        if not in_doubt:
            await conn.execute(
                q("effect_record_intent"), ctx.job_id, ctx.attempt_id, key, lookup is not None
            )
    if in_doubt:
        assert lookup is not None
        found = await lookup(key)
        if found is not None:
            ctx.log.info("effect.reconciled", key=key, found=True)
            await _record(ctx, key, "done", found, None)
            return found
        ctx.log.info("effect.reconciled", key=key, found=False)
        await _arm(ctx, key, has_lookup=True)
    ctx.log.info("effect.started", key=key)
    try:
        outcome = await do()
    except Exception as exc:
        await _record(ctx, key, "failed", None, scrub(f"{type(exc).__name__}: {exc}")[:2000])
        raise
    # A CancelledError (the grace period ran out) leaves the intent: the outcome is in doubt.
    await _record(ctx, key, "done", outcome, None)
    ctx.log.info("effect.done", key=key)
    return outcome


async def _arm(ctx: Context, key: str, *, has_lookup: bool) -> None:
    async with ctx.store.pool.acquire() as conn, conn.transaction():
        if await conn.fetchval(q("job_lock_for_attempt"), ctx.job_id, ctx.attempt_id) is None:
            raise LeaseLost(ctx.public_id)
        await conn.execute(q("effect_record_intent"), ctx.job_id, ctx.attempt_id, key, has_lookup)


async def _record(ctx: Context, key: str, status: str, outcome: Any, error: str | None) -> None:
    async with ctx.store.pool.acquire() as conn, conn.transaction():
        if await conn.fetchval(q("job_lock_for_attempt"), ctx.job_id, ctx.attempt_id) is None:
            raise LeaseLost(ctx.public_id)
        await conn.execute(
            q("effect_record_outcome"), ctx.job_id, key, status, outcome, error, ctx.attempt_id
        )
