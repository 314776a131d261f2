"""The dashboard's pages: the overview, the job list, one job, kinds and schedules, and the
download of a job's asset. Each reads through the store (``JobStore``, the transport door) and
renders a template; each page's live part (``#live``) is what a live update reloads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from aiohttp import web

from dashboard.shared import STATES, Context, ListQuery, bad_input, refusal, render
from jobs.transport import JobStatus, Outbox, Queries, State, UnknownJob, read_id

PAGE = 50
COUNT_CAP = 10_000
SILENT_AFTER_SECONDS = 15.0
"""A process not heard from for this long (three heartbeats) is shown as silent."""
NON_TERMINAL = [s for s in State if not s.terminal]


async def overview(request: web.Request, ctx: Context) -> web.Response:
    """Per kind: its queued, running, waiting and unknown jobs, its limit, whether it is
    paused, its recent failure rate; the outbox's backlog and delivery lag; the fleet."""
    store = ctx.store
    lines = {line.kind: line for line in await store.kind_lines()}
    counts = await store.state_counts(NON_TERMINAL)
    kinds = sorted(set(lines) | {k for k, _ in counts})
    rates = await store.failure_rates(kinds)
    rows = []
    for kind in kinds:
        line = lines.get(kind)
        rows.append(
            {
                "kind": kind,
                "counts": {s.value: counts.get((kind, s.value), 0) for s in NON_TERMINAL},
                "later": line.waiting if line else 0,
                "limit": line.concurrency if line else None,
                "paused": bool(line and line.paused),
                "throttled": line.throttled if line else None,
                "failure_rate": rates.get(kind),
            }
        )
    processes = await store.processes()
    return render(
        "overview.html",
        ctx,
        title="Overview",
        kinds=rows,
        states=[s.value for s in NON_TERMINAL],
        backlog=await store.backlog(),
        processes=processes,
        silent_after=SILENT_AFTER_SECONDS,
        actions=await store.actions(limit=20),
    )


async def job_list(request: web.Request, ctx: Context) -> web.Response:
    """The jobs a filter matches, a page at a time, newest or oldest first."""
    asked = ListQuery.parse(request.query)
    page = await ctx.store.search(
        asked.where, after=asked.after, newest_first=not asked.oldest_first, limit=PAGE
    )
    total = await ctx.store.count(asked.where, cap=COUNT_CAP)
    return render(
        "jobs.html",
        ctx,
        title="Jobs",
        asked=asked,
        page=page,
        total=total,
        cap=COUNT_CAP,
        states=STATES,
        kinds=await _kind_names(ctx),
    )


async def _kind_names(ctx: Context) -> list[str]:
    return sorted({line.kind for line in await ctx.store.kind_lines()})


@dataclass(frozen=True)
class Entry:
    """One line of a job's timeline: when, what kind of record, what it says."""

    at: datetime
    what: str
    text: str
    by: str | None = None


def timeline(status: JobStatus, actions: list[Any]) -> list[Entry]:
    """A job's events, attempts, steps, questions, messages and operator actions, by time."""
    out: list[Entry] = []
    for e in status.events:
        data = e.data if isinstance(e.data, dict) else {}
        if e.is_question:
            text = f"question: {e.reason or ''}".strip()
        else:
            source = e.from_state.value if e.from_state else "new"
            text = f"{source} → {e.to_state.value}" + (f": {e.reason}" if e.reason else "")
        if e.ignored:
            text = f"ignored: {text}"
        out.append(Entry(e.at, f"event · {e.actor}", text, data.get("by")))
    for a in status.attempts:
        out.append(Entry(a.started_at, "attempt", f"attempt {a.number} started on {a.worker}"))
        if a.ended_at is not None:
            error = f" ({str(a.error)[:200]})" if a.error else ""
            out.append(
                Entry(a.ended_at, "attempt", f"attempt {a.number} ended: {a.outcome}{error}")
            )
    for s in status.steps:
        text = f"step {s.get('number')} {s.get('name')}: {s.get('outcome') or 'running'}"
        out.append(Entry(_when(s.get("started_at")), "step", text))
    for q in status.questions:
        out.append(Entry(q.asked_at, "question", f"asked {q.key!r}: {q.text} ({q.status.value})"))
        if q.answer is not None and q.closed_at is not None:
            out.append(Entry(q.closed_at, "answer", f"{q.key!r}: {q.answer}", q.answered_by))
    for m in status.messages:
        refused = f" (refused: {m.refused})" if m.refused else ""
        out.append(Entry(m.at, f"message · {m.actor.value}", f"{m.text}{refused}", m.sender))
    for a in actions:
        out.append(Entry(a.at, "operator", a.action.replace("_", " "), a.by))
    return sorted(out, key=lambda entry: entry.at)


def _when(value: Any) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def job_id_of(request: web.Request) -> str:
    """The job id in the path, as people type it. Raises a 400 (bad_input)."""
    try:
        return read_id(request.match_info["job"])
    except UnknownJob as exc:
        raise bad_input(f"{exc.job_id[:20]!r} is not a job id") from None


async def one_job(request: web.Request, ctx: Context) -> web.Response:
    """One job: its task, parameters, result or reason, usage against its budgets; its
    timeline; its assets; its notices; its Discord thread; what an operator may do to it."""
    public_id = job_id_of(request)
    try:
        status = await ctx.store.status_in_line(public_id)
    except UnknownJob:
        raise refusal(
            web.HTTPNotFound, "No such job", f"no job {public_id} (it may have been pruned)"
        ) from None
    job = status.job
    notices = await Outbox(ctx.pool, job.origin.get("transport") or "").notices(job.id)
    retries = await ctx.store.retries_of(job.id)
    retried = await ctx.store.get_by_id(job.retry_of) if job.retry_of else None
    budget = ctx.settings.budget
    return render(
        "job.html",
        ctx,
        title=f"Job {job.public_id}",
        job=job,
        status=status,
        entries=timeline(status, await ctx.store.actions_on(job.id)),
        notices=notices,
        retries=retries,
        retried=retried,
        budgets=[
            ("steps", len(status.steps), budget.job_steps),
            ("tokens", job.usage.get("tokens", 0), budget.job_tokens),
            ("seconds", round(job.run_seconds or 0, 1), budget.job_seconds),
        ],
        thread=_discord_link(job.origin, await discord_thread(ctx.pool, job.id)),
        is_live=not job.state.terminal,
        State=State,
    )


def _discord_link(origin: dict[str, Any], thread: str | None) -> str | None:
    """The job's Discord thread (or its channel, until delivery made the thread), as a link."""
    channel = thread or origin.get("channel_id")
    if origin.get("transport") != "discord" or not channel:
        return None
    return f"https://discord.com/channels/{origin.get('guild_id') or '@me'}/{channel}"


@cache
def _queries() -> Queries:
    return Queries(Path(__file__).parent / "sql")


async def discord_thread(pool: Any, job_id: int) -> str | None:
    """The thread Discord delivery made for the job (None: none yet, or not a Discord job)."""
    value = await _queries().fetchval(pool, "discord_thread", job_id=job_id)
    return str(value) if value else None


async def asset(request: web.Request, ctx: Context) -> web.Response:
    """One of a job's assets, as a download."""
    public_id = job_id_of(request)
    name = request.match_info["name"]
    try:
        content_type, body = await ctx.store.asset(public_id, name)
    except (UnknownJob, KeyError):
        raise web.HTTPNotFound(text="no such asset") from None
    return web.Response(
        body=body,
        content_type=content_type or "application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


async def kinds_and_schedules(request: web.Request, ctx: Context) -> web.Response:
    """Every kind with its rules (limit, start rate, pause), and every schedule."""
    return render(
        "kinds.html",
        ctx,
        title="Kinds and schedules",
        lines=await ctx.store.kind_lines(),
        schedules=await ctx.store.schedules(),
    )
