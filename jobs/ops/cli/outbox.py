"""``errand outbox ...``: inspect and retry the notices waiting for a transport (dead-lettered
ones above all)."""

from __future__ import annotations

from typing import Annotated

import typer

import jobs.limits as limits
from jobs.ops.cli.help import Command, Group
from jobs.ops.cli.render import notice_lines
from jobs.ops.cli.shared import JsonOpt, checked, emit, fail, job_id_arg, with_engine

outbox_app = typer.Typer(
    cls=Group, no_args_is_help=True, help="Inspect and retry notices to transports."
)


@outbox_app.command("list", cls=Command)
def outbox_list(
    status: Annotated[str, typer.Option(help="dead | pending | delivered | all")] = "dead",
    job: Annotated[str | None, typer.Option(help="Only this job's notices.")] = None,
    limit: Annotated[int, typer.Option(help="At most N notices.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List notices to transports, newest first (dead-lettered ones by default)."""
    from jobs.engine.admin import NoticeStatus
    from jobs.ops.inspect import list_notices

    try:
        wanted = None if status == "all" else NoticeStatus(status)
    except ValueError:
        known = ", ".join([*NoticeStatus, "all"])
        fail(f"--status: one of {known} (not {status[:40]!r})")
    checked(lambda: limits.integer("--limit", limit, 1, limits.MAX_LIMIT))
    if job is not None:
        job = job_id_arg(job)
    rows = with_engine(lambda e: list_notices(e.pool, status=wanted, job=job, limit=limit))
    emit({"notices": rows}, as_json, notice_lines(rows))


@outbox_app.command("retry", cls=Command)
def outbox_retry(
    ids: Annotated[list[str] | None, typer.Argument(help="Dead-lettered notice ids.")] = None,
    all_dead: Annotated[bool, typer.Option("--all-dead", help="Every dead notice.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Deliver dead-lettered notices again (all named ids must be dead, or nothing changes)."""
    from jobs.ops.inspect import retry_notices

    if bool(ids) == all_dead:
        fail("name notice ids or pass --all-dead (not both)")
    bad = [i for i in ids or [] if not (i.isascii() and i.isdigit()) or int(i) > limits.MAX_BIGINT]
    if bad:
        fail(f"bad notice id {bad[0][:40]!r}: ids are numbers (see errand outbox list)")
    numbers = [int(i) for i in ids or []]
    revived = with_engine(lambda e: retry_notices(e.pool, None if all_dead else numbers))
    emit({"retried": revived}, as_json, f"retrying {len(revived)} notice(s)")
