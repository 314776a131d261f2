"""What /job status and /job list show: the status page of one job, and one line per job.

Pure functions of the job's rows (no I/O), built from the words and marks of
:mod:`bot.render`, so the page is tested without Discord.
"""

from __future__ import annotations

from typing import Any

from bot.render import (
    CANCEL_STATES,
    DELAYED,
    ICONS,
    MAX_CONTENT,
    QUESTION_ICON,
    clean,
    code,
    counts_steps,
    person,
    requester,
    silent_since,
    stamp,
    times,
    usage_line,
    waiting_line,
)
from jobs.transport import JobStatus, JobView, Notice, State


def event_by(actor: str, data: Any, to: State, job: JobView) -> str:
    """Who moved ``job`` to ``to`` as ``actor`` (an event's, with its ``data``): the person (a
    resolve records them; a requester is the job's; a cancel's person is the job's
    ``cancel_requested_by``), else the actor (worker, system)."""
    by = data.get("by") if isinstance(data, dict) else None
    if not by and actor == "requester":
        by = job.requester
    elif not by and actor == "operator" and to in CANCEL_STATES:
        by = job.cancel_requested_by
    return person(str(by), actor) if by else actor


def status_page(
    status: JobStatus,
    *,
    task: str,
    thread_id: str | None,
    deliveries: list[Notice],
    events: int = 6,
) -> str:
    """The ephemeral answer to /job status."""
    job = status.job
    lines = [
        f"{ICONS[job.state]} **{job.state.value}** · `{job.public_id}` · {job.kind}"
        + (f" — {code(job.reason, 200)}" if job.reason else "")
    ]
    if task:
        lines.append(f"> {clean(task, 200)}")
    detail = [job.attempt_line]
    if job.progress_line:
        detail.append(clean(job.progress_line, 150))
    used = usage_line(job.usage, steps=not counts_steps(job))
    if used:
        detail.append(f"budget used: {used}")
    lines.append(" · ".join(detail))
    when = [f"submitted {stamp(job.created_at)}"]
    if job.started_at:
        when.append(f"started {stamp(job.started_at)}")
    if job.finished_at:
        when.append(f"finished {stamp(job.finished_at)} ({times(job).lower()})")
    elif job.state is State.QUEUED and job.attempts:
        when.append(f"next try {stamp(job.run_at)}")
    elif job.state is State.QUEUED and job.run_at > job.created_at + DELAYED:
        when.append(f"starts {stamp(job.run_at)} ({stamp(job.run_at, 'f')})")
    lines.append(" · ".join(when))
    if status.place is not None:  # "3rd in line for agent · 4 of 4 running · starts in ..."
        lines.append(f"⏳ {status.place.line}")
    silent = silent_since(job)
    if silent is not None:
        lines.append(f"⚠️ Its worker was last heard from {stamp(silent)}.")
    if job.state is State.WAITING:
        lines.append(waiting_line(job))
    said = job.wait_key if job.state is State.WAITING else None  # the waiting line says it
    asking = [q for q in status.questions if q.status == "open" and q.key != said]
    for asked in asking[:3]:  # asked while it runs: the question's message is in the thread
        lines.append(f"{QUESTION_ICON} Asks {requester(job)}: {clean(asked.text, 200)}")
    if thread_id:
        lines.append(f"Thread: <#{thread_id}>")
    if job.state is State.UNKNOWN:
        # What the notice's "See /job status" points at: how to settle it.
        lines.append(
            f"To settle it, check whether it happened, then `/job resolve id:{job.public_id} "
            "outcome:... note:...` (an operator; the requester too where the kind allows)."
        )
    if status.assets:
        lines.append(
            "Assets: "
            + ", ".join(f"{code(str(a['name']), 80)} ({a['size']} B)" for a in status.assets[:20])
        )
    dead = [d for d in deliveries if d.dead_at is not None]
    waiting = [d for d in deliveries if d.delivered_at is None and d.dead_at is None and d.error]
    for d in dead:
        lines.append(f"⚠️ Notice ({d.to_state}) not delivered: {code(d.error or '?', 200)}")
    for d in waiting:
        lines.append(f"⚠️ Notice ({d.to_state}) retrying: {code(d.error or '?', 200)}")
    shown = [e for e in status.events if not e.ignored][-events:]
    if shown:
        lines.append("Last events:")
        for e in shown:
            why = f": {code(e.reason, 120)}" if e.reason else ""
            if e.is_question:  # a question asked, answered or closed: no state changed
                lines.append(f"• {stamp(e.at, 'T')} {QUESTION_ICON} question by {e.actor}{why}")
                continue
            source = e.from_state.value if e.from_state else "—"
            lines.append(
                f"• {stamp(e.at, 'T')} {source} → {e.to_state.value} "
                f"by {event_by(e.actor, e.data, e.to_state, job)}{why}"
            )
    return "\n".join(lines)[:MAX_CONTENT]


def job_line(job: JobView, task: str) -> str:
    """One job in /job list."""
    label = f" — {clean(task, 60)}" if task else ""
    return (
        f"{ICONS[job.state]} `{job.public_id}` {job.kind} **{job.state.value}** "
        f"{stamp(job.created_at)}{label}"
    )
