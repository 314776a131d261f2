"""The operator CLI of the engine: ``errand migrate``, ``errand worker`` and ``errand job ...``.

Every ``job`` command takes ``--json`` and prints one JSON object. Bad input (unknown id, bad
params, an illegal transition) exits with code 2 and one line on stderr, and changes nothing.

Start-up is part of what a user waits for: this module imports only typer, asyncpg and light
engine modules; each command imports what it uses (``job status`` never loads the kinds, the
handler runtime or the health server). Check with ``python -X importtime``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar, cast
from urllib.parse import parse_qsl, urlsplit

import asyncpg
import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

import jobs.limits as limits
from jobs.engine.db import UNAVAILABLE
from jobs.engine.state import Actor, State
from jobs.engine.views import JobStatus
from jobs.errors import DatabaseUnavailable, ErrandError, Refused, UnknownKind
from jobs.secrets import scrub

if TYPE_CHECKING:
    from jobs.ops.app import Engine
    from jobs.runtime.registry import Registry
    from jobs.settings import Settings

T = TypeVar("T")

# -- help as a person reads it ----------------------------------------------------------------

# The order commands are listed in: running it, working with jobs, upkeep (the root app in
# bot/cli.py puts the bot's commands first).
COMMAND_ORDER = ("worker", "job", "outbox", "migrate", "prune")
JOB_COMMAND_ORDER = ("submit", "status", "show", "list", "cancel", "resolve")
# What to write instead of a Python type next to an option without its own metavar.
TYPE_WORDS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "Path": "PATH"}


def _type_word(param: TyperOption | TyperArgument, ctx: Any) -> str | None:
    """``--json`` (a flag) takes nothing; ``--limit INTEGER``; ``--state queued|running...``.

    typer prints Python types (``<bool>``, ``<list[str]>``) by default; users type values.
    """
    if param.metavar is not None:
        # An argument's metavar is its name, already shown; an option's is what it takes.
        return None if isinstance(param, TyperArgument) else param.metavar or None
    if isinstance(param, TyperOption) and param.is_flag:
        return None
    label = param.display_type(ctx).strip("<>")
    if label.startswith("list[") and label.endswith("]"):
        label = label[5:-1]  # a repeatable option: the help says so
    return TYPE_WORDS.get(label, label)


TyperOption.display_type_rich = _type_word  # type: ignore[method-assign, assignment]
TyperArgument.display_type_rich = _type_word  # type: ignore[method-assign, assignment]


class OrderedGroup(TyperGroup):
    """Lists its commands in a reading order (``order``), not the order they were defined in."""

    order: tuple[str, ...] = ()

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(self.order)}
        return sorted(names, key=lambda n: rank.get(n, len(rank)))


class MainGroup(OrderedGroup):
    order = COMMAND_ORDER


class JobGroup(OrderedGroup):
    order = JOB_COMMAND_ORDER


def kind_rows() -> list[tuple[str, str, list[tuple[str, str, str]], str]]:
    """Every registered kind: name, description, parameters (name, "type, default", help) and
    an example command line."""
    from jobs.kinds import default_registry
    from jobs.settings import Settings

    registry = default_registry(Settings().extra_kinds)
    rows = []
    for name in registry.names():
        spec = registry.get(name)
        params = []
        example = [f"errand job submit {name}"]
        for field, info in spec.params.model_fields.items():
            word = _field_type(info.annotation)
            if info.is_required():
                what = f"{word}, required"
                example.append(f"-p {field}={_placeholder(word)}")
            else:
                default = info.get_default(call_default_factory=True)
                what = f"{word}, default {json.dumps(default, default=str)}"
            params.append((field, what, info.description or ""))
        if len(example) == 1 and params:
            field, info = next(iter(spec.params.model_fields.items()))
            value = json.dumps(info.get_default(call_default_factory=True), default=str)
            example.append(f"-p {field}={value}")
        rows.append((name, spec.description, params, " ".join(example)))
    return rows


def kinds_help_text() -> str:
    """The kinds as plain text (``job submit --help`` without rich)."""
    lines = ["Kinds (each parameter is given as --param NAME=VALUE):"]
    for name, description, params, _ in kind_rows():
        lines.append(f"{name}: {description}")
        lines += [f"  {p} ({what}): {text}" for p, what, text in params] or ["  no parameters"]
    lines.append("Examples:")
    lines += [f"  {example}" for *_, example in kind_rows()]
    # typer joins single newlines into one paragraph; a blank line is a line break.
    return "\n\n".join(lines)


def _field_type(annotation: Any) -> str:
    """A parameter's type in the words a person types it: integer, number, text, true|false,
    a JSON list or object."""
    import types
    import typing

    from pydantic import BaseModel

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _field_type(args[0])
    if origin is typing.Literal:
        return "|".join(str(a) for a in typing.get_args(annotation))
    words = {int: "integer", float: "number", str: "text", bool: "true|false"}
    if annotation in words:
        return words[annotation]
    if annotation is list or origin is list:
        return "JSON list"
    if (
        annotation is dict
        or origin is dict
        or (isinstance(annotation, type) and issubclass(annotation, BaseModel))
    ):
        return "JSON object"
    return "JSON"


def _placeholder(word: str) -> str:
    return {"integer": "3", "number": "1.5", "true|false": "true", "text": '"..."'}.get(
        word, "'{...}'"
    )


class SubmitCommand(TyperCommand):
    """``job submit``: its help lists the registered kinds, read when the help is shown."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        try:
            from rich.console import Console, Group
            from rich.panel import Panel
            from rich.table import Table
            from rich.text import Text
        except ImportError:  # typer without rich: plain text after the options
            self.epilog = kinds_help_text()
            super().format_help(ctx, formatter)
            return
        super().format_help(ctx, formatter)
        rows = kind_rows()
        table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column(style="dim", no_wrap=True)
        table.add_column()
        for name, description, params, _ in rows:
            table.add_row(name, "", Text(description, style="bold"))
            for field, what, text in params or [("", "", "no parameters")]:
                table.add_row(f"  {field}", what, text)
        hint = Text("Each parameter is given as --param NAME=VALUE (JSON values are parsed).")
        console = Console()
        console.print(
            Panel(
                Group(hint, table),
                title="Kinds",
                title_align="left",
                border_style="dim",
            )
        )
        examples = Text("\n".join(example for *_, example in rows))
        examples.append("\nerrand job submit demo -p steps=3 -p step_seconds=0.5 --json")
        console.print(Panel(examples, title="Examples", title_align="left", border_style="dim"))


app = typer.Typer(
    cls=MainGroup,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    help="Errand: durable jobs.",
)
job_app = typer.Typer(
    cls=JobGroup,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help="Submit, inspect, cancel and resolve jobs.",
)
app.add_typer(job_app, name="job")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def fail(message: str, code: int = 2) -> NoReturn:
    """One clear line on stderr, exit code 2 (bad input) unless told otherwise."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(code)


def with_engine(fn: Callable[[Engine], Awaitable[T]], *, kinds: bool = False) -> T:
    """Run ``fn`` against a migrated engine; engine errors become exit code 2.

    A database that cannot be reached, or one that refuses the request, is one line naming it
    (exit code 1), never a traceback. ``kinds``: load the registry of kinds (submit, resolve);
    other commands skip importing them.
    """
    from jobs.ops.app import load_settings, open_engine

    settings = load_settings(quiet=True)
    registry = None if kinds else cast("Registry", _NoKinds())

    async def main() -> T:
        # One-shot commands do not wait for a database that is down: they say so at once.
        async with open_engine(settings, registry=registry, pool_max=2, wait=0) as engine:
            return await fn(engine)

    try:
        return asyncio.run(main())
    except (Refused, ValueError) as exc:
        fail(str(exc))
    except _UNREACHABLE as exc:
        cause = exc.__cause__ if isinstance(exc, DatabaseUnavailable) and exc.__cause__ else exc
        fail(
            f"cannot reach the database ({database_name(settings)}): "
            f"{type(cause).__name__}: {one_line(cause)}",
            code=1,
        )
    except asyncpg.PostgresError as exc:
        fail(f"the database refused the request ({type(exc).__name__}): {one_line(exc)}", code=1)


_UNREACHABLE: tuple[type[BaseException], ...] = (DatabaseUnavailable, *UNAVAILABLE)


def one_line(exc: BaseException) -> str:
    """An error's message on one short line, secrets masked."""
    return scrub(" ".join(str(exc).split()))[:300] or type(exc).__name__


def database_name(settings: Settings) -> str:
    """Where the database is, without its password."""
    if settings.db.url is None:
        return f"embedded PostgreSQL in {settings.db.data_dir}"
    dsn = settings.db.url.get_secret_value()
    try:
        parts = urlsplit(dsn)
        host = parts.hostname or dict(parse_qsl(parts.query)).get("host", "localhost")
        port = f":{parts.port}" if parts.port else ""
        user = f"{parts.username}@" if parts.username else ""
        return f"{parts.scheme}://{user}{host}{port}{parts.path}"
    except ValueError:
        return "DATABASE_URL (unparsable)"


def checked(thunk: Callable[[], T]) -> T:
    """The value of a bounds check (jobs.limits); a refusal is one line and exit code 2."""
    try:
        return thunk()
    except ErrandError as exc:
        fail(str(exc))


def text_arg(name: str, value: str, limit: int = limits.MAX_NAME) -> str:
    """A text input within its bounds (no NUL, at most ``limit``), else exit code 2."""
    return checked(lambda: limits.text(name, value, limit))


def job_id_arg(value: str) -> str:
    return text_arg("job id", value, limits.MAX_JOB_ID)


class _NoKinds:
    """The registry of a command that never looks a kind up (status, list, cancel, show...):
    the kinds and the handler runtime they import are never loaded."""

    def get(self, name: str) -> NoReturn:
        raise UnknownKind(name, [])

    def names(self) -> list[str]:
        return []


def emit(obj: dict[str, Any], as_json: bool, text: str) -> None:
    """Print the answer; a registered secret never reaches the terminal, whatever it holds."""
    out = json.dumps(obj, default=str) if as_json else text
    typer.echo(scrub(out, patterns=False))


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are JSON when they parse as JSON, else strings."""
    params: dict[str, Any] = {}
    for pair in pairs:
        text_arg("--param", pair, limits.MAX_PARAMS_BYTES)
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            fail(f"bad --param {pair[:40]!r}: expected key=value")
        text_arg("--param name", key)
        try:
            params[key] = json.loads(raw, parse_constant=_refuse_constant)
        except json.JSONDecodeError:
            params[key] = raw
        except RecursionError:
            fail(f"bad --param {key}: nested deeper than {limits.MAX_DEPTH} levels")
        except ValueError as exc:
            fail(f"bad --param {key}: {exc}")
    checked(lambda: limits.json_value("params", params))
    return params


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"numbers must be finite, not {name}")


@app.command()
def migrate() -> None:
    """Apply pending database migrations."""

    async def go(engine: Engine) -> list[str]:
        return engine.migrated  # every start applies them (advisory-locked); this one reports

    applied = with_engine(go)
    typer.echo("migrations up to date" + (f" (applied {', '.join(applied)})" if applied else ""))


@app.command()
def worker(
    concurrency: Annotated[int | None, typer.Option(help="Jobs run at once.")] = None,
) -> None:
    """Run jobs until SIGTERM/SIGINT (a second signal stops hard)."""
    from jobs.ops.process import Process

    process = Process(worker=True)
    if concurrency is not None:
        process.settings.worker.concurrency = concurrency
    raise typer.Exit(process.run())


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
    if from_file is not None:
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
    params = parse_params(param or [])

    async def go(engine: Engine) -> tuple[Any, bool]:
        return await engine.store.submit(
            kind, params, requester=requester, idempotency_key=idempotency_key
        )

    job, created = with_engine(go, kinds=True)
    out = job.to_json() | {"created": created}
    emit(out, as_json, f"{job.public_id} {job.state.value}")


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
        rows.append(Submission(raw["kind"], params, who or requester, origin, group, key))
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


@job_app.command("status")
def job_status(job_id: str, as_json: JsonOpt = False) -> None:
    """Show a job's state, progress, attempts and events."""
    job_id = job_id_arg(job_id)
    status = with_engine(lambda e: e.store.status(job_id))
    emit(status.to_json(), as_json, status_text(status))


# Parameters that hold what a job is asked to do, in order of preference (as /summon fills).
TASK_PARAMS = ("prompt", "task", "text")


def status_text(status: JobStatus) -> str:
    """``job status`` for a person: what was asked, how far it got, how it ended, and why."""
    job = status.job
    task = job.origin.get("task") or next(
        (job.params[k] for k in TASK_PARAMS if isinstance(job.params.get(k), str)), None
    )
    rows: list[tuple[str, str]] = []
    if task:
        rows.append(("task", " ".join(str(task).split())[:300]))
    shown_params = {k: v for k, v in job.params.items() if k not in TASK_PARAMS}
    if shown_params:
        rows.append(("params", json.dumps(shown_params, default=str, sort_keys=True)[:300]))
    if job.progress_line:  # "Step 3 of 5 · note", as Discord and the page show it
        rows.append(("progress", job.progress_line))
    if job.state is State.SUCCEEDED and job.result is not None:
        rows.append(("result", json.dumps(job.result, default=str, sort_keys=True)[:500]))
    if job.reason:
        rows.append(("reason", job.reason))
    if job.state is State.FAILED and job.error is not None:
        error = job.error
        if isinstance(error, dict) and {"type", "message"} <= set(error):
            error = f"{error['type']}: {error['message']}"
        text = error if isinstance(error, str) else json.dumps(error, default=str)
        if not job.reason or job.reason not in text:
            rows.append(("error", text[:500]))
    rows.append(("", job.attempt_line))  # "attempt 1 · 0 failures (max 3)", as on Discord
    if job.usage and any(job.usage.values()):
        rows.append(("usage", ", ".join(f"{k} {v}" for k, v in job.usage.items() if v)))
    rows.append(("requester", job.requester))
    rows.append(("submitted", f"{job.created_at:%Y-%m-%d %H:%M:%S %Z}".strip()))
    lines = [f"{job.public_id}  {job.kind}  {job.state.value}"]
    lines += [f"{label}: {value}" if label else value for label, value in rows]
    if status.steps:
        lines.append("steps:")
        lines += [
            f"  {st['number']}. {st['name']}: {st['outcome'] or 'running'}"
            + (f" ({st['error']})" if st["error"] else "")
            for st in status.steps
        ]
    if status.assets:
        lines.append("assets:")
        lines += [f"  {a['name']} ({a['size']} bytes)" for a in status.assets]
    lines.append("events:")
    for ev in status.events:
        mark = " (no effect)" if ev.ignored else ""
        source = ev.from_state.value if ev.from_state else "—"
        lines.append(
            f"  {ev.at:%H:%M:%S}  {source} → {ev.to_state.value} by {ev.actor}{mark}"
            + (f": {ev.reason}" if ev.reason else "")
        )
    return "\n".join(lines)


@job_app.command("cancel")
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
    emit(out, as_json, f"{result.job.public_id} {result.outcome} ({result.job.state.value})")


@job_app.command("list")
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
        return await engine.store.list_jobs(
            states=state,
            kind=kind,
            requester=requester,
            newer_than_seconds=newer_than,
            limit=limit,
        )

    jobs = with_engine(go)
    text = (
        "\n".join(
            f"{j.public_id} {j.kind:10} {j.state.value:10} {j.created_at:%Y-%m-%d %H:%M}"
            for j in jobs
        )
        or "no jobs"
    )
    emit({"jobs": [j.to_json() for j in jobs]}, as_json, text)


@job_app.command("resolve")
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


outbox_app = typer.Typer(no_args_is_help=True, help="Inspect and retry notices to transports.")
app.add_typer(outbox_app, name="outbox")


@job_app.command("show")
def job_show(job_id: str, as_json: JsonOpt = False) -> None:
    """Show a job's whole timeline: events, attempts, steps, effects and notices."""
    from jobs.ops.inspect import timeline

    job_id = job_id_arg(job_id)
    found = with_engine(lambda e: timeline(e.store, job_id))
    job = found.status.job
    lines = [
        f"{job.public_id} {job.kind} {job.state.value}"
        + (f" ({job.reason})" if job.reason else ""),
        f"requester: {job.requester}  {job.attempt_line}  "
        f"created: {job.created_at:%Y-%m-%d %H:%M:%S}",
    ]
    lines += [f"  {e.at:%Y-%m-%d %H:%M:%S.%f} {e.what:8} {e.text}" for e in found.entries]
    emit(found.to_json(), as_json, "\n".join(lines))


@outbox_app.command("list")
def outbox_list(
    status: Annotated[str, typer.Option(help="dead | pending | delivered | all")] = "dead",
    job: Annotated[str | None, typer.Option(help="Only this job's notices.")] = None,
    limit: Annotated[int, typer.Option(help="At most N notices.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List notices to transports, newest first (dead-lettered ones by default)."""
    from jobs.ops.inspect import list_notices

    if status not in {"dead", "pending", "delivered", "all"}:
        fail(f"--status: one of dead, pending, delivered, all (not {status[:40]!r})")
    checked(lambda: limits.integer("--limit", limit, 1, limits.MAX_LIMIT))
    if job is not None:
        job = job_id_arg(job)
    wanted = None if status == "all" else status
    rows = with_engine(lambda e: list_notices(e.pool, status=wanted, job=job, limit=limit))
    text = (
        "\n".join(
            f"{r['id']} {r['public_id']} {r['topic']}->{r['payload']['to']} "
            f"attempts={r['attempts']} "
            + ("delivered" if r["delivered_at"] else "dead" if r["dead_at"] else "pending")
            + (f": {r['last_error']}" if r["last_error"] else "")
            for r in rows
        )
        or "no notices"
    )
    emit({"notices": rows}, as_json, text)


@outbox_app.command("retry")
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


@app.command()
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


def run(application: typer.Typer, *, fast_exit: bool = False) -> NoReturn:
    """Run a CLI app; a usage error (bad option, missing argument) is one line and exit 2, and
    so is an :class:`~jobs.errors.ErrandError` a command raises (a bad token, options that do
    not fit together): its message is written for the person.

    ``fast_exit``: end the process through :func:`~jobs.exits.exit_now` (an entry point's own
    ``main``); otherwise through ``SystemExit``, so a caller's cleanup and ``pytest.raises``
    still work.
    """
    from typer.exceptions import TyperException

    from jobs.exits import exit_now

    def end(code: int) -> NoReturn:
        if fast_exit:
            exit_now(code)
        sys.exit(code)

    try:
        code = application(standalone_mode=False)
    except TyperException as exc:  # typer's (vendored click's) usage and parameter errors
        message = " ".join(exc.format_message().split())
        if message:  # empty when the help was shown (no arguments at all)
            typer.echo(f"error: {message} (see --help)", err=True)
        end(exc.exit_code or 2)
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(130)
    except Exception as exc:  # never a traceback: one line, and the log has the details
        if isinstance(exc, ErrandError) and not isinstance(exc, DatabaseUnavailable):
            typer.echo(f"error: {one_line(exc)}", err=True)
            end(2)
        typer.echo(f"error: internal error: {type(exc).__name__}: {one_line(exc)}", err=True)
        end(1)
    end(code if isinstance(code, int) else 0)


def main() -> None:
    """Entry point of the engine-only CLI."""
    run(app, fast_exit=True)
