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
from typing import Any

from jobs.engine.records import EffectStatus
from jobs.errors import EffectInDoubt
from jobs.runtime.attempt import Attempt
from jobs.secrets import scrub, scrub_data

Do = Callable[[], Awaitable[Any]]
Lookup = Callable[[str], Awaitable[Any]]


async def run_effect(ctx: Attempt, key: str, do: Do, lookup: Lookup | None = None) -> Any:
    """Do ``do`` at most once for this job under ``key``; see the module docstring.

    Raises:
        JobCancelled: a stop was requested before the effect started (no new effect starts).
        EffectInDoubt: a previous intent has no recorded outcome and no ``lookup``.
        LeaseLost: this attempt no longer holds the lease; nothing was done.
    """
    ctx.checkpoint()
    # Every write below is retried through a database outage (ctx.write): an outcome is kept
    # until it is written.
    begun = await ctx.write(
        "effect_intent",
        lambda: ctx.records.effect_begin(
            key, has_lookup=lookup is not None, ran_here=key in ctx.effects_ran
        ),
    )
    if begun.done:
        ctx.log.info("effect.already_done", key=key)
        return begun.outcome
    if begun.in_doubt:
        if lookup is None:
            raise EffectInDoubt(key)
        found = await lookup(key)
        if found is not None:
            ctx.log.info("effect.reconciled", key=key, found=True)
            await ctx.write(
                "effect_outcome",
                lambda: ctx.records.effect_end(key, EffectStatus.DONE, _masked(found), None),
            )
            return found
        ctx.log.info("effect.reconciled", key=key, found=False)
        await ctx.write("effect_intent", lambda: ctx.records.effect_arm(key, has_lookup=True))
    ctx.log.info("effect.started", key=key)
    ctx.effects_ran.add(key)
    try:
        outcome = await do()
    except Exception as exc:
        error = scrub(f"{type(exc).__name__}: {exc}")[:2000]
        await ctx.write(
            "effect_outcome", lambda: ctx.records.effect_end(key, EffectStatus.FAILED, None, error)
        )
        raise
    # A CancelledError (the grace period ran out) leaves the intent: the outcome is in doubt.
    await ctx.write(
        "effect_outcome",
        lambda: ctx.records.effect_end(key, EffectStatus.DONE, _masked(outcome), None),
    )
    ctx.log.info("effect.done", key=key)
    return outcome


def _masked(outcome: Any) -> Any:
    """An effect's outcome as stored: configured secrets masked by value."""
    return scrub_data(outcome, patterns=False)
