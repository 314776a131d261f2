"""``errand job ...``: submit, inspect, answer, tell, cancel and resolve jobs.

Every command takes ``--json`` and prints one JSON object. The commands are listed in ``--help``
in the order they are defined here: doing, looking, changing.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import jobs.limits as limits
import jobs.when as when
from jobs.engine.line import PRIORITY_MAX, PRIORITY_MIN
from jobs.engine.mail import MAX_KEY, MAX_MESSAGE
from jobs.engine.state import Actor, State
from jobs.errors import UnknownKind
from jobs.ops.cli.help import Command, Group, SubmitCommand
from jobs.ops.cli.render import cancel_text, job_lines, status_text, timeline_text
from jobs.ops.cli.shared import (
    JsonOpt,
    checked,
    emit,
    fail,
    job_id_arg,
    text_arg,
    with_engine,
)
from jobs.params import parse_params

if TYPE_CHECKING:
    from jobs.ops.app import Engine

job_app = typer.Typer(
    cls=Group,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="Submit, inspect, answer, tell, cancel and resolve jobs.",
)


@job_app.command("submit", cls=SubmitCommand)
def job_submit(
    kind: Annotated[
        str | None,
        typer.Argument(metavar="KIND", help="A registered kind (below); omit with --from."),
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param", "-p", metavar="NAME=VALUE", help="A parameter of the kind; repeatable."
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option(metavar="KEY", help="Submitting again with the same key returns that job."),
    ] = None,
    requester: Annotated[str, typer.Option(metavar="WHO", help="Who asks.")] = "cli",
    priority: Annotated[
        int | None,
        typer.Option(metavar="N", help="-10 to 10, higher runs first (default: the kind's)."),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(metavar="TIME", help="Run then: HH:MM or a date and time (in --tz)."),
    ] = None,
    in_: Annotated[
        str | None, typer.Option("--in", metavar="DURATION", help="Run after this long: 2h, 90s.")
    ] = None,
    tz: Annotated[
        str | None, typer.Option(metavar="ZONE", help="Read --at in this timezone (default UTC).")
    ] = None,
    from_file: Annotated[
        Path | None,
        typer.Option(
            "--from",
            metavar="FILE.jsonl",
            help='Submit every line of a JSON Lines file ("-": stdin) in one statement: '
            '{"kind": K, "params": {...}, "idempotency_key": KEY, "requester": R}.',
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Submit a job (or a file of them); prints its id at once."""
    run_at = _run_at(at, in_, tz)
    if priority is not None:
        checked(lambda: limits.integer("--priority", priority, PRIORITY_MIN, PRIORITY_MAX))
    if from_file is not None:
        if run_at is not None or priority is not None:
            fail("--from takes each job's time and priority from the file, not --at/--in")
        if kind is not None or param or idempotency_key is not None:
            fail("--from takes the kinds, params and keys from the file; give no KIND or --param")
        text_arg("--requester", requester)
        _submit_file(from_file, requester, as_json)
        return
    if kind is None:
        fail("name a KIND, or submit a file with --from FILE.jsonl")
    text_arg("kind", kind)
    text_arg("--requester", requester)
    if idempotency_key is not None:
        text_arg("--idempotency-key", idempotency_key)
    params = checked(lambda: parse_params(param or []))

    async def go(engine: Engine) -> tuple[Any, bool]:
        from jobs.traces import tracing

        tracing.setup("cli")  # nothing (and no import) unless an OTLP endpoint is set
        with tracing.span("errand.submit", kind=kind, requester=requester):
            return await engine.store.submit(
                kind,
                params,
                requester=requester,
                idempotency_key=idempotency_key,
                priority=priority,
                run_at=run_at,
                traceparent=tracing.traceparent(),  # the job's spans join this one
            )

    job, created = with_engine(go, kinds=True)
    out = job.to_json() | {"created": created}
    due = f" (due {job.run_at:%Y-%m-%d %H:%M:%S %Z})" if run_at is not None else ""
    emit(out, as_json, f"{job.public_id} {job.state.value}{due}")


def _run_at(at: str | None, in_: str | None, tz: str | None) -> datetime | None:
    """``--at`` or ``--in`` as a time to come (None: now); bad input exits with code 2."""
    if at is not None and in_ is not None:
        fail("give --at or --in, not both")
    for name, value in (("--at", at), ("--in", in_), ("--tz", tz)):
        if value is not None:
            text_arg(name, value)
    try:
        zone = when.zone(tz)
        said = at if at is not None else f"in {in_}" if in_ is not None else None
        return when.when(said, tz=zone) if said is not None else None
    except ValueError as exc:
        fail(str(exc))


_ROW_KEYS = {"kind", "params", "idempotency_key", "requester", "origin", "origin_group"}


def _submit_file(path: Path, requester: str, as_json: bool) -> None:
    """``job submit --from``: read and check every line, then one bulk submit (all or nothing)."""
    from jobs.engine.store import Submission

    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    rows: list[Submission] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            fail(f"line {number}: not JSON ({exc.msg})")
        if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str):
            fail(f'line {number}: expected an object with a "kind"')
        unknown = sorted(set(raw) - _ROW_KEYS)
        if unknown:
            known = ", ".join(sorted(_ROW_KEYS))
            fail(f"line {number}: unknown field {unknown[0]!r} (known: {known})")
        params, key, who = raw.get("params", {}), raw.get("idempotency_key"), raw.get("requester")
        origin, group = raw.get("origin"), raw.get("origin_group")
        if not isinstance(params, dict):
            fail(f'line {number}: "params" must be an object')
        if not (key is None or isinstance(key, str)) or not (who is None or isinstance(who, str)):
            fail(f'line {number}: "idempotency_key" and "requester" must be strings')
        if not (origin is None or isinstance(origin, dict)):
            fail(f'line {number}: "origin" must be an object')
        if not (group is None or isinstance(group, str)):
            fail(f'line {number}: "origin_group" must be a string')
        where = f"line {number}"  # the store's refusals name it as the checks above do
        rows.append(
            Submission(raw["kind"], params, who or requester, origin, group, key, where=where)
        )
    if not rows:
        fail(f"{path}: no jobs (one JSON object per line)")

    async def go(engine: Engine) -> list[tuple[str, bool]]:
        return await engine.store.submit_many(rows)

    done = with_engine(go, kinds=True)
    jobs = [{"id": public_id, "created": created} for public_id, created in done]
    count = sum(1 for _, c in done if c)
    text_out = "\n".join(
        f"{public_id} {'queued' if created else 'exists'}" for public_id, created in done
    )
    emit({"jobs": jobs, "created": count}, as_json, text_out)


@job_app.command("status", cls=Command)
def job_status(job_id: str, as_json: JsonOpt = False) -> None:
    """Show a job's state, progress, attempts and events; a queued one's place in line."""
    job_id = job_id_arg(job_id)
    status = with_engine(lambda e: e.store.status_in_line(job_id))
    emit(status.to_json(), as_json, status_text(status))


@job_app.command("show", cls=Command)
def job_show(job_id: str, as_json: JsonOpt = False) -> None:
    """Show a job's whole timeline: events, attempts, steps, effects and notices."""
    from jobs.ops.inspect import timeline

    job_id = job_id_arg(job_id)
    found = with_engine(lambda e: timeline(e.store, job_id))
    emit(found.to_json(), as_json, timeline_text(found))


@job_app.command("list", cls=Command)
def job_list(
    state: Annotated[list[State] | None, typer.Option(help="Only these states.")] = None,
    kind: Annotated[str | None, typer.Option(help="Only this kind.")] = None,
    requester: Annotated[str | None, typer.Option(help="Only this requester.")] = None,
    newer_than: Annotated[float | None, typer.Option(help="Only jobs newer than N s.")] = None,
    limit: Annotated[int, typer.Option(help="At most N jobs.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List recent jobs, newest first."""
    checked(lambda: limits.integer("--limit", limit, 1, limits.MAX_LIMIT))
    if newer_than is not None:
        checked(lambda: limits.number("--newer-than", newer_than, 0, limits.MAX_SECONDS))
    for name, value in (("--kind", kind), ("--requester", requester)):
        if value is not None:
            text_arg(name, value)

    async def go(engine: Engine) -> Any:
        found = await engine.store.list_jobs(
            states=state,
            kind=kind,
            requester=requester,
            newer_than_seconds=newer_than,
            limit=limit,
        )
        # A kind no worker knows and no job has is a typo, as `job submit` says; a kind whose
        # plugin was removed still lists its jobs.
        if kind is not None and not found and kind not in engine.registry.names():
            raise UnknownKind(kind, engine.registry.names())
        return found

    # The registry is loaded (its imports) only to check a --kind.
    jobs = with_engine(go, kinds=kind is not None)
    emit({"jobs": [j.to_json() for j in jobs]}, as_json, job_lines(jobs))


@job_app.command("answer", cls=Command)
def job_answer(
    job_id: str,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The answer: a choice, or words.")],
    question: Annotated[
        str | None,
        typer.Option(metavar="KEY", help="Which question (default: the one it waits for)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a job's question; a job waiting for it resumes."""
    job_id = job_id_arg(job_id)
    text_arg("answer", text, MAX_MESSAGE)
    if question is not None:
        text_arg("--question", question, MAX_KEY)

    async def go(engine: Engine) -> Any:
        return await engine.store.answer(job_id, text, key=question, actor=Actor.OPERATOR, by="cli")

    outcome = with_engine(go)
    asked = outcome.question
    if outcome.why is not None:  # refused: recorded on its timeline, nothing else changed
        fail(f"question {asked.key!r} of job {outcome.job.public_id}: {outcome.why}")
    out = outcome.job.to_json() | {"question": asked.to_json(), "outcome": outcome.result}
    emit(
        out, as_json, f"{outcome.job.public_id} answered {asked.key!r} ({outcome.job.state.value})"
    )


@job_app.command("tell", cls=Command)
def job_tell(
    job_id: str,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="What to tell it.")],
    as_json: JsonOpt = False,
) -> None:
    """Send a job a follow-up; it reads it at its next safe point."""
    job_id = job_id_arg(job_id)
    text_arg("message", text, MAX_MESSAGE)

    async def go(engine: Engine) -> Any:
        return await engine.store.tell(job_id, text, actor=Actor.OPERATOR, by="cli")

    told = with_engine(go)
    out = told.job.to_json() | {"message": told.message.to_json()}
    seq = told.message.seq
    emit(out, as_json, f"{told.job.public_id} told (message {seq}) ({told.job.state.value})")


@job_app.command("cancel", cls=Command)
def job_cancel(
    job_id: str,
    reason: Annotated[str | None, typer.Option(help="Why.")] = None,
    force: Annotated[bool, typer.Option(help="Operator: end it now, acknowledged or not.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Cancel a job (queued: at once; running: asks it to stop)."""
    job_id = job_id_arg(job_id)
    if reason is not None:
        text_arg("--reason", reason, limits.MAX_REASON)

    async def go(engine: Engine) -> Any:
        return await engine.store.cancel(
            job_id, actor=Actor.OPERATOR, by="cli", reason=reason, force=force
        )

    result = with_engine(go)
    out = result.job.to_json() | {"outcome": result.outcome, "changed": result.changed}
    emit(out, as_json, cancel_text(result.job.public_id, result.outcome, result.job.state))


@job_app.command("resolve", cls=Command)
def job_resolve(
    job_id: str,
    as_: Annotated[str, typer.Option("--as", help="succeeded | failed | retry | cancelled")],
    note: Annotated[str, typer.Option(help="What you found (recorded).")],
    as_json: JsonOpt = False,
) -> None:
    """Settle a job whose outcome is unknown."""
    job_id = job_id_arg(job_id)
    text_arg("--as", as_)
    text_arg("--note", note, limits.MAX_NOTE)

    async def go(engine: Engine) -> Any:
        return await engine.store.resolve(
            job_id, actor=Actor.OPERATOR, outcome=as_, note=note, by="operator"
        )

    job = with_engine(go, kinds=True)
    emit(job.to_json(), as_json, f"{job.public_id} {job.state.value}")
