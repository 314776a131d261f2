"""``errand schedule ...``: recurring jobs. ``add`` a schedule (a cron expression read in a
timezone, a kind and its parameters, where its jobs report), ``list`` them, ``pause``,
``resume`` and ``remove`` one. Every Errand process ticks them (docs/kinds.md, "Schedules")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from jobs.ops.cli.help import Command, Group
from jobs.ops.cli.shared import JsonOpt, checked, emit, fail, text_arg, with_engine
from jobs.params import parse_params

if TYPE_CHECKING:
    from jobs.engine.schedule import Schedule
    from jobs.ops.app import Engine

schedule_app = typer.Typer(
    cls=Group,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="Run a kind on a schedule: add, list, pause, resume and remove schedules.",
)


@schedule_app.command("add", cls=Command)
def schedule_add(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Letters, digits, '.', '_', '-'.")],
    kind: Annotated[str, typer.Argument(metavar="KIND", help="A registered kind.")],
    cron: Annotated[
        str,
        typer.Option(
            metavar="EXPR",
            help='When: a cron expression, e.g. "0 9 * * 1-5" (a sixth field first: seconds).',
        ),
    ],
    tz: Annotated[str, typer.Option(metavar="ZONE", help="Read --cron in this timezone.")] = "UTC",
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", metavar="NAME=VALUE", help="A parameter; repeatable."),
    ] = None,
    catch_up: Annotated[
        str,
        typer.Option(
            metavar="skip|last", help="After downtime: skip missed ticks, or run the last."
        ),
    ] = "last",
    priority: Annotated[
        int | None, typer.Option(metavar="N", help="-10 to 10 (default: the kind's).")
    ] = None,
    channel: Annotated[
        str | None, typer.Option(metavar="ID", help="A Discord channel its jobs report in.")
    ] = None,
    guild: Annotated[
        str | None, typer.Option(metavar="ID", help="The Discord server of --channel.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a schedule: a job of KIND at every tick of --cron."""
    for label, value in (("NAME", name), ("KIND", kind), ("--cron", cron), ("--tz", tz)):
        text_arg(label, value)
    if catch_up not in ("skip", "last"):
        fail(f"--catch-up must be skip or last, not {catch_up!r}")
    params = checked(lambda: parse_params(param or []))
    origin, group = _reporting(name, channel, guild)

    async def go(engine: Engine) -> Schedule:
        return await engine.store.add_schedule(
            name,
            cron=cron,
            kind=kind,
            params=params,
            tz=tz,
            priority=priority,
            origin=origin,
            origin_group=group,
            catch_up="skip" if catch_up == "skip" else "last",
            by="cli",
        )

    made = with_engine(go, kinds=True)
    emit(made.to_json(), as_json, f"{made.name}: next at {made.next_at:%Y-%m-%d %H:%M:%S %Z}")


def _reporting(
    name: str, channel: str | None, guild: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """The origin of a schedule's jobs when they report in a Discord channel (as ``/summon``
    writes one), and its group (the server)."""
    if channel is None:
        if guild is not None:
            fail("--guild goes with --channel")
        return None, None
    for label, value in (("--channel", channel), ("--guild", guild)):
        if value is not None and not value.isdigit():
            fail(f"{label} must be a Discord id (digits), not {value!r}")
    origin: dict[str, Any] = {
        "transport": "discord",
        "guild_id": guild,
        "channel_id": channel,
        "channel_type": 0,
        "user_id": None,
        "task": f"schedule {name}",
    }
    if guild is not None:
        origin["partition"] = int(guild) >> 22
    return origin, guild


@schedule_app.command("list", cls=Command)
def schedule_list(as_json: JsonOpt = False) -> None:
    """Every schedule, its next tick and whether it is paused."""
    found = with_engine(lambda e: e.store.schedules())
    lines = [
        f"{s.name:20} {s.kind:10} {s.cron!r:18} {s.tz:16} "
        f"{'paused' if s.paused_at else f'next {s.next_at:%Y-%m-%d %H:%M:%S %Z}'}"
        for s in found
    ]
    emit({"schedules": [s.to_json() for s in found]}, as_json, "\n".join(lines) or "no schedules")


@schedule_app.command("pause", cls=Command)
def schedule_pause(name: str, as_json: JsonOpt = False) -> None:
    """Stop a schedule's ticks until it is resumed."""
    text_arg("NAME", name)
    done = with_engine(lambda e: e.store.pause_schedule(name))
    emit(done.to_json(), as_json, f"{done.name}: paused")


@schedule_app.command("resume", cls=Command)
def schedule_resume(name: str, as_json: JsonOpt = False) -> None:
    """Tick a paused schedule again, from its next tick from now."""
    text_arg("NAME", name)
    done = with_engine(lambda e: e.store.resume_schedule(name))
    emit(done.to_json(), as_json, f"{done.name}: next at {done.next_at:%Y-%m-%d %H:%M:%S %Z}")


@schedule_app.command("remove", cls=Command)
def schedule_remove(name: str, as_json: JsonOpt = False) -> None:
    """Remove a schedule; the jobs it made stay."""
    text_arg("NAME", name)
    with_engine(lambda e: e.store.remove_schedule(name))
    emit({"name": name, "removed": True}, as_json, f"{name}: removed")
