"""What ``errand`` prints for a person: a job's status, a list of jobs, a job's whole timeline,
a list of notices. The same facts as the bot's ``bot/render.py`` writes for Discord, laid out
for a terminal (``--json`` prints the data instead)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs.engine.line import place_line
from jobs.engine.mail import Question, QuestionStatus, WaitFor
from jobs.engine.state import State
from jobs.engine.views import JobStatus, JobView
from jobs.params import TASK_FIELDS

if TYPE_CHECKING:
    from jobs.ops.inspect import Timeline


def status_text(status: JobStatus) -> str:
    """``job status`` for a person: what was asked, how far it got, how it ended, and why."""
    job = status.job
    task = job.origin.get("task") or next(
        (job.params[k] for k in TASK_FIELDS if isinstance(job.params.get(k), str)), None
    )
    rows: list[tuple[str, str]] = []
    if task:
        rows.append(("task", " ".join(str(task).split())[:300]))
    shown_params = {k: v for k, v in job.params.items() if k not in TASK_FIELDS}
    if shown_params:
        rows.append(("params", json.dumps(shown_params, default=str, sort_keys=True)[:300]))
    if status.place is not None:  # "3rd in line for agent · 4 of 4 running · starts in ..."
        rows.append(("place", place_line(status.place)))
    elif job.state is State.QUEUED and job.run_at > job.created_at and not job.attempts:
        rows.append(("due", f"{job.run_at:%Y-%m-%d %H:%M:%S %Z}".strip()))
    if job.progress_line:  # "Step 3 of 5 · note", as Discord and the page show it
        rows.append(("progress", job.progress_line))
    if job.state is State.WAITING:
        rows.append(("waiting", waiting_text(job)))
    if job.state is State.SUCCEEDED and job.result is not None:
        rows.append(("result", json.dumps(job.result, default=str, sort_keys=True)[:500]))
    if job.reason:
        rows.append(("reason", job.reason))
    if job.state is State.FAILED and job.error is not None:
        error = job.error
        if isinstance(error, dict) and {"type", "message"} <= set(error):
            error = f"{error['type']}: {error['message']}"
        text = error if isinstance(error, str) else json.dumps(error, default=str)
        if not job.reason or (job.reason not in text and text not in job.reason):  # once
            rows.append(("error", text[:500]))
    rows.append(("", job.attempt_line))  # "attempt 1 · 0 failures (max 3)", as on Discord
    if job.finished_at is not None and job.run_seconds is not None:
        # Both named, as on Discord: the wall time counts every wait, the run time none.
        wall = (job.finished_at - job.created_at).total_seconds()
        rows.append(("", f"run time {job.run_seconds:.1f} s · wall time {wall:.1f} s"))
    if job.usage and any(job.usage.values()):
        rows.append(("usage", ", ".join(f"{k} {v}" for k, v in job.usage.items() if v)))
    rows.append(("requester", job.requester))
    rows.append(("submitted", f"{job.created_at:%Y-%m-%d %H:%M:%S %Z}".strip()))
    lines = [f"{job.public_id}  {job.kind}  {job.state.value}"]
    lines += [f"{label}: {value}" if label else value for label, value in rows]
    if status.steps:
        # By name only: a step's row number counts every attempt's steps ("54. step 53").
        lines.append("steps:")
        lines += [
            f"  {st['name']}: {st['outcome'] or 'running'}"
            + (f" ({st['error']})" if st["error"] else "")
            for st in status.steps
        ]
    if status.assets:
        lines.append("assets:")
        lines += [f"  {a['name']} ({a['size']} bytes)" for a in status.assets]
    if status.questions:
        lines.append("questions:")
        lines += [f"  {question_text(q)}" for q in status.questions]
    if status.messages:
        lines.append("messages:")
        lines += [
            f"  {m.seq}. {m.sender}: {m.text}" + (f" (refused: {m.refused})" if m.refused else "")
            for m in status.messages
        ]
    lines.append("events:")
    for ev in status.events:
        if ev.is_question:
            lines.append(f"  {ev.at:%H:%M:%S}  question by {ev.actor}: {ev.reason}")
            continue
        mark = " (no effect)" if ev.ignored else ""
        source = ev.from_state.value if ev.from_state else "—"
        lines.append(
            f"  {ev.at:%H:%M:%S}  {source} → {ev.to_state.value} by {ev.actor}{mark}"
            + (f": {ev.reason}" if ev.reason else "")
        )
    return "\n".join(lines)


def _at(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d %H:%M:%S %Z}".strip() if value else "-"


def waiting_text(job: JobView) -> str:
    """What a waiting job waits for, since and until when, on one line."""
    if job.wait_for == WaitFor.QUESTION:
        what = f"an answer to {job.wait_key!r}: {job.wait_text}"
    elif job.wait_for == WaitFor.MESSAGE:
        what = "a message (errand job tell)"
    else:
        what = "its time"
    until = f" · until {_at(job.wait_until)}" if job.wait_until else ""
    return f"for {what} · since {_at(job.wait_since)}{until}"


def question_text(question: Question) -> str:
    """One question, its choices, and how it ended."""
    offered = f" [{', '.join(question.choices)}]" if question.choices else ""
    head = f"{question.key}: {question.text}{offered}"
    if question.status is QuestionStatus.ANSWERED:
        return f"{head} → answered by {question.answered_by}: {question.answer}"
    if question.is_open:
        return f"{head} → open" + (
            f" until {_at(question.expires_at)}" if question.expires_at else ""
        )
    return f"{head} → {question.status.value}: {question.closed_reason}"


CANCEL_TEXT = {
    "cancelled": "{id} cancelled",
    "cancelling": "{id} asked to stop (cancelling); `errand job status {id}` shows when it has",
    "already_cancelling": "{id} is already stopping (cancelling)",
    "too_late": "{id} already {state}: nothing to cancel",
}
"""What ``job cancel`` says for each outcome of the request (``--json`` has the outcome)."""


def cancel_text(public_id: str, outcome: str, state: State) -> str:
    """``job cancel`` for a person: what the request did, in words."""
    return CANCEL_TEXT[outcome].format(id=public_id, state=state.value)


def job_lines(jobs: list[JobView]) -> str:
    """``job list``: one line per job, newest first."""
    lines = [
        f"{j.public_id} {j.kind:10} {j.state.value:10} {j.created_at:%Y-%m-%d %H:%M}" for j in jobs
    ]
    return "\n".join(lines) or "no jobs"


def timeline_text(found: Timeline) -> str:
    """``job show``: the job, then its events, attempts, steps, effects and notices in time
    order."""
    job = found.status.job
    lines = [
        f"{job.public_id} {job.kind} {job.state.value}"
        + (f" ({job.reason})" if job.reason else ""),
        f"requester: {job.requester}  {job.attempt_line}  "
        f"created: {job.created_at:%Y-%m-%d %H:%M:%S}",
    ]
    lines += [f"  {e.at:%Y-%m-%d %H:%M:%S.%f} {e.what:8} {e.text}" for e in found.entries]
    return "\n".join(lines)


def notice_lines(rows: list[dict[str, Any]]) -> str:
    """``outbox list``: one line per notice, newest first."""
    lines = [
        f"{r['id']} {r['public_id']} {r['topic']}->{r['payload']['to']} "
        f"attempts={r['attempts']} "
        + ("delivered" if r["delivered_at"] else "dead" if r["dead_at"] else "pending")
        + (f": {r['last_error']}" if r["last_error"] else "")
        for r in rows
    ]
    return "\n".join(lines) or "no notices"
