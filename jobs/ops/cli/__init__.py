"""The operator CLI of the engine: ``errand worker``, ``errand job ...``, ``errand kind ...``,
``errand schedule ...``, ``errand outbox ...``, ``errand migrate`` and ``errand prune``, a module
per command group (``job.py``, ``kind.py``, ``schedule.py``, ``outbox.py``; the top-level
commands here), with their help (``help.py``), their text (``render.py``) and what
they share (``shared.py``). :func:`build_cli` makes a console script of them with a
transport's commands beside them, and its :meth:`~jobs.ops.cli.shared.Cli.run` runs it.

Start-up is part of what a user waits for: this package imports only typer, asyncpg and light
engine modules; each command imports what it uses (``job status`` never loads the kinds, the
handler runtime or the health server). Check with ``python -X importtime``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperCommand

import jobs.limits as limits
from jobs.ops.cli.help import Command, Group
from jobs.ops.cli.job import job_app
from jobs.ops.cli.kind import kind_app
from jobs.ops.cli.outbox import outbox_app
from jobs.ops.cli.render import status_text
from jobs.ops.cli.schedule import schedule_app
from jobs.ops.cli.shared import Cli, JsonOpt, checked, emit, fail, text_arg, with_engine

if TYPE_CHECKING:
    from jobs.ops.app import Engine

__all__ = ["Cli", "app", "build_cli", "main", "status_text"]

app = Cli(
    cls=Group,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    help="Errand: durable jobs.",
)


@app.command(cls=Command)
def worker(
    concurrency: Annotated[int | None, typer.Option(help="Jobs run at once.")] = None,
) -> None:
    """Run jobs until SIGTERM/SIGINT (a second signal stops hard)."""
    from jobs.ops.process import Process

    process = Process(worker=True)
    if concurrency is not None:
        process.settings.worker.concurrency = concurrency
    raise typer.Exit(process.run())


app.add_typer(job_app, name="job")
app.add_typer(kind_app, name="kind")
app.add_typer(schedule_app, name="schedule")
app.add_typer(outbox_app, name="outbox")


@app.command(cls=Command)
def migrate() -> None:
    """Apply pending database migrations."""

    async def go(engine: Engine) -> list[str]:
        return engine.migrated  # every start applies them (advisory-locked); this one reports

    applied = with_engine(go)
    typer.echo("migrations up to date" + (f" (applied {', '.join(applied)})" if applied else ""))


@app.command(cls=Command)
def prune(
    older_than: Annotated[
        str | None, typer.Option(help="Required: finished longer ago than this (30d, 12h).")
    ] = None,
    with_dead_notices: Annotated[
        bool, typer.Option(help="Also prune jobs whose only undelivered notices are dead-lettered.")
    ] = False,
    dry_run: Annotated[bool, typer.Option(help="Count and list; delete nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete finished jobs past retention (never live, unknown or undelivered ones)."""
    from jobs.ops.inspect import parse_duration
    from jobs.ops.inspect import prune as run_prune

    if older_than is None:
        fail("--older-than is required, e.g. errand prune --older-than 30d")
    text_arg("--older-than", older_than)
    try:
        seconds = parse_duration(older_than)
    except ValueError as exc:
        fail(str(exc))
    checked(lambda: limits.number("--older-than", seconds, 0, limits.MAX_SECONDS))
    done = with_engine(
        lambda e: run_prune(e.pool, seconds, with_dead_notices=with_dead_notices, dry_run=dry_run)
    )
    verb = "would prune" if dry_run else "pruned"
    emit(done.to_json(), as_json, f"{verb} {done.jobs} job(s)")


def build_cli(*transports: typer.Typer, help: str) -> Cli:
    """A console script: each transport's commands, then the engine's, side by side at the top
    level (``errand bot``, ``errand worker``), in reading order, with ``help``; its
    :meth:`~Cli.run` runs the command line (an entry point's ``main``: ``run(fast_exit=True)``).

    The apps are added as they are: the engine's own :data:`app` never changes. A transport
    command that names no class of its own gets :class:`~jobs.ops.cli.help.Command`, so its
    help says what to type in words too.
    """
    root = Cli(
        cls=Group, no_args_is_help=True, add_completion=False, rich_markup_mode="rich", help=help
    )
    for transport in transports:
        for command in transport.registered_commands:
            if command.cls in (None, TyperCommand):  # typer's default: no class of its own
                command.cls = Command
        root.add_typer(transport)
    root.add_typer(app)
    return root


def main() -> None:
    """Entry point of the engine-only CLI."""
    app.run(fast_exit=True)
