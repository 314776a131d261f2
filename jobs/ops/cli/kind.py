"""``errand kind ...``: the line each kind's jobs wait in, and an operator's rules for it.

``list`` shows, per kind, its queued (due, and not yet due), running jobs, its cap, whether it is
paused and the median of its recent run times; ``limit``, ``rate``, ``pause`` and ``resume``
change its rules in PostgreSQL, and every worker's next claim obeys them (no restart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from jobs.ops.cli.help import Command, Group
from jobs.ops.cli.shared import JsonOpt, emit, fail, text_arg, with_engine

if TYPE_CHECKING:
    from jobs.engine.line import KindLine
    from jobs.ops.app import Engine

kind_app = typer.Typer(
    cls=Group,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="See each kind's line; cap, rate-limit, pause and resume a kind across the fleet.",
)


def _known(engine: Engine, kind: str) -> None:
    """A kind this install runs (its registry); else one line and exit code 2."""
    if kind not in engine.registry:
        fail(f"unknown kind {kind!r}; kinds: {', '.join(engine.registry.names())}")


def _count(text: str, name: str, low: int) -> int | None:
    """``N`` (at least ``low``), or ``none`` to clear the operator's setting."""
    if text.strip().lower() == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        fail(f"{name} must be a whole number or 'none', not {text!r}")
    if value < low:
        fail(f"{name} must be at least {low}, not {value}")
    return value


@kind_app.command("list", cls=Command)
def kind_list(as_json: JsonOpt = False) -> None:
    """Each kind's queued, waiting and running jobs, its limit, pause and recent run time."""

    async def go(engine: Engine) -> list[KindLine]:
        return await engine.store.kind_lines(engine.registry.names())

    lines = with_engine(go, kinds=True)
    emit({"kinds": [k.to_json() for k in lines]}, as_json, _table(lines))


def _table(lines: list[KindLine]) -> str:
    head = (
        f"{'kind':14} {'queued':>6} {'waiting':>7} {'running':>7} {'limit':>5}  {'p50':>8}  state"
    )
    rows = [head]
    for k in lines:
        p50 = f"{k.p50_seconds:.1f} s" if k.p50_seconds is not None else "—"
        limit = str(k.concurrency) if k.concurrency is not None else "—"
        state = k.throttled or "open"
        if k.starts_per_minute is not None:
            state += f" ({k.started_last_minute}/{k.starts_per_minute} starts/min)"
        rows.append(
            f"{k.kind:14} {k.queued:>6} {k.waiting:>7} {k.running:>7} {limit:>5}  {p50:>8}  {state}"
        )
    return "\n".join(rows)


def _set(kind: str, text: str, name: str, low: int, as_json: bool, key: str) -> None:
    """Set (or clear, with ``none``) one of a kind's caps: ``key`` is ``limit`` or ``rate``."""
    text_arg("kind", kind)
    text_arg("N", text)
    value = _count(text, name, low)

    async def go(engine: Engine) -> None:
        _known(engine, kind)
        if key == "limit":
            await engine.store.set_limit(kind, value)
        else:
            await engine.store.set_rate(kind, value)

    with_engine(go, kinds=True)
    if value is None:
        said = f"back to its own {key}"
    elif key == "limit":
        said = f"at most {value} at once"
    else:
        said = f"at most {value} starts a minute"
    field = "limit" if key == "limit" else "starts_per_minute"
    emit({"kind": kind, field: value}, as_json, f"{kind}: {said}")


@kind_app.command("limit", cls=Command)
def kind_limit(
    kind: Annotated[str, typer.Argument(metavar="KIND", help="A registered kind.")],
    limit: Annotated[
        str, typer.Argument(metavar="N", help="Jobs at once across the fleet; 'none' to clear.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Cap how many of a kind's jobs run at once across every worker."""
    _set(kind, limit, "the limit", 0, as_json, "limit")


@kind_app.command("rate", cls=Command)
def kind_rate(
    kind: Annotated[str, typer.Argument(metavar="KIND", help="A registered kind.")],
    per_minute: Annotated[
        str, typer.Argument(metavar="N", help="Starts per minute across the fleet; 'none'.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Cap how many of a kind's jobs start per minute across every worker."""
    _set(kind, per_minute, "the rate", 1, as_json, "rate")


@kind_app.command("pause", cls=Command)
def kind_pause(
    kind: Annotated[str, typer.Argument(metavar="KIND", help="A registered kind.")],
    as_json: JsonOpt = False,
) -> None:
    """Hold a kind's queued jobs (running ones finish) until it is resumed."""
    text_arg("kind", kind)

    async def go(engine: Engine) -> None:
        _known(engine, kind)
        await engine.store.pause(kind, by="cli")

    with_engine(go, kinds=True)
    emit({"kind": kind, "paused": True}, as_json, f"{kind}: paused (running jobs finish)")


@kind_app.command("resume", cls=Command)
def kind_resume(
    kind: Annotated[str, typer.Argument(metavar="KIND", help="A registered kind.")],
    as_json: JsonOpt = False,
) -> None:
    """Let a paused kind's queued jobs start again."""
    text_arg("kind", kind)

    async def go(engine: Engine) -> None:
        _known(engine, kind)
        await engine.store.resume(kind, by="cli")

    with_engine(go, kinds=True)
    emit({"kind": kind, "paused": False}, as_json, f"{kind}: resumed")
