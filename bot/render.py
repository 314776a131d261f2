"""What users read: the progress message of each state, the notices and the status page.

Pure functions of the job record (no I/O), so every format is tested without Discord. Text
that came from users (the task) is escaped for markdown and mentions, and cut to Discord's limits.
Times use Discord timestamps (``<t:...:R>``), which clients keep current without edits.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import discord

from jobs.transport import TERMINAL, Actor, JobStatus, JobView, Notice, State, scrub

MAX_CONTENT = 2000
NO_PINGS = discord.AllowedMentions.none()
"""Allowed mentions that ping nobody, for every message that must not notify anyone."""
BAR_WIDTH = 12

ICONS: dict[State, str] = {
    State.QUEUED: "⏳",
    State.RUNNING: "▶️",
    State.CANCELLING: "🛑",
    State.SUCCEEDED: "✅",
    State.FAILED: "❌",
    State.CANCELLED: "⛔",
    State.WAITING: "⏸️",
    State.UNKNOWN: "❓",
}

NOTICE_STATES = frozenset({State.SUCCEEDED, State.FAILED, State.CANCELLED, State.UNKNOWN})
"""States whose transition gets a notice that mentions the requester."""

CANCELLABLE = frozenset({State.QUEUED, State.RUNNING, State.WAITING})
"""States in which the progress message carries a Cancel button."""


def clean(text: str, limit: int) -> str:
    """User text made inert (no markdown, no mentions) on one line, cut to ``limit``."""
    one_line = " ".join(scrub(text, patterns=False).split())
    escaped = discord.utils.escape_mentions(discord.utils.escape_markdown(one_line))
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "…"


def code(text: str, limit: int) -> str:
    """Text shown inside inline code: backticks cannot close it early."""
    text = " ".join(scrub(text, patterns=False).split()).replace("`", "ˋ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stamp(at: datetime | None, style: str = "R") -> str:
    """A Discord timestamp (clients render and update it locally)."""
    return f"<t:{int(at.timestamp())}:{style}>" if at else "—"


def seconds(total: float) -> str:
    """A duration the way people say it: 4.2 s, 3 min 5 s, 2 h 10 min."""
    if total < 60:
        return f"{total:.1f} s"
    minutes, secs = divmod(int(total), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def duration(job: JobView, now: datetime | None = None) -> float:
    """Seconds from the start (or the submit) to the end (or now)."""
    start = job.started_at or job.created_at
    end = job.finished_at or now or datetime.now(UTC)
    return max(0.0, (end - start).total_seconds())


def bar(done: float, total: float) -> str:
    """A text progress bar with the percentage."""
    ratio = 0.0 if total <= 0 else min(1.0, max(0.0, done / total))
    filled = round(ratio * BAR_WIDTH)
    return f"`{'▓' * filled}{'░' * (BAR_WIDTH - filled)}` {ratio:.0%}"


def progress_bar_line(job: JobView) -> str | None:
    """The job's one progress line, with a bar when the total is known (never ``None`` text):
    ``▓▓▓▓▓▓▓▓▓▓░░ 80% · Step 4 of 5 · counting``. The same line as the CLI's."""
    line = job.progress_line
    if line is None:
        return None
    p = job.progress or {}
    if p.get("total"):
        return f"{bar(float(p['done']), float(p['total']))} · {clean(line, 150)}"
    return clean(line, 150)


def usage_line(usage: dict[str, Any]) -> str:
    """Budget use so far: tokens, tool calls, steps."""
    parts = []
    if usage.get("tokens"):
        parts.append(f"{int(usage['tokens']):,} tokens")
    if usage.get("tool_calls"):
        parts.append(f"{int(usage['tool_calls'])} tool calls")
    if usage.get("steps"):
        parts.append(f"{int(usage['steps'])} steps")
    return " · ".join(parts)


def summary(value: Any, limit: int = 300) -> str:
    """A short, inert summary of a result or error."""
    if value is None:
        return ""
    if isinstance(value, dict) and set(value) >= {"type", "message"}:
        value = f"{value['type']}: {value['message']}"
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return code(text, limit)


@dataclass(frozen=True)
class Progress:
    """One rendering of the progress message."""

    state: State
    content: str
    cancellable: bool

    @property
    def key(self) -> str:
        """What decides whether an edit is needed."""
        return f"{self.cancellable}|{self.content}"


def progress(
    job: JobView, *, task: str, may_resolve: bool, assets: Sequence[tuple[str, int]] = ()
) -> Progress:
    """The progress message for the job's current state; ``assets`` are the names and sizes of
    what it left behind (a delivery round reads them with the job)."""
    head = f"{ICONS[job.state]} **{job.state.value}** · `{job.public_id}` · {job.kind}"
    lines = [head]
    if task:
        lines.append(f"> {clean(task, 300)}")
    attempt = job.attempt_line
    used = usage_line(job.usage)
    shown = progress_bar_line(job)
    if job.state is State.QUEUED:
        if job.attempts:  # a retry wait, or released by a worker that stopped
            lines.append(
                f"Runs again {stamp(job.run_at)} · {attempt}"
                + (f" · last try: {code(job.reason, 200)}" if job.reason else "")
            )
        else:
            lines.append(f"Waiting for a worker since {stamp(job.created_at)}")
        if shown:  # what is done stays shown while it waits: progress never goes backwards
            lines.append(shown)
    elif job.state in (State.RUNNING, State.CANCELLING):
        if shown:
            lines.append(shown)
        lines.append(
            " · ".join(x for x in (f"Started {stamp(job.started_at)}", attempt, used) if x)
        )
        if job.state is State.CANCELLING:
            lines.append(f"Stopping: {code(job.cancel_reason or job.reason or 'cancel', 200)}")
    elif job.state is State.WAITING:
        lines.append(waiting_line(job))
        if shown:
            lines.append(shown)
        lines.append(" · ".join(x for x in (attempt, used) if x))
    elif job.state is State.UNKNOWN:
        if shown:
            lines.append(shown)
        lines.append(f"The outcome is unknown: {code(job.reason or 'no reason recorded', 300)}")
        lines.append(
            f"Check whether it happened, then `/job resolve {job.public_id}`."
            if may_resolve
            else "An operator has to check what happened and resolve it."
        )
    else:
        if shown:
            lines.append(shown)
        lines.append(" · ".join(x for x in (f"Took {seconds(duration(job))}", attempt, used) if x))
        by = cancelled_by(job) if job.state is State.CANCELLED else None
        if by:
            why = f": {code(job.reason, 300)}" if job.reason else ""
            lines.append(f"Cancelled by {by}{why}")
        elif job.reason:
            lines.append(f"Reason: {code(job.reason, 300)}")
        if job.state is State.SUCCEEDED and job.result is not None:
            lines.append(f"Result: `{summary(job.result, 500)}`")
        error = summary(job.error, 500)
        if job.state is State.FAILED and error and (not job.reason or job.reason not in error):
            lines.append(f"Error: `{error}`")
        if assets:
            names = ", ".join(f"{code(name, 80)} ({size} B)" for name, size in assets[:10])
            more = f" and {len(assets) - 10} more" if len(assets) > 10 else ""
            lines.append(f"Assets: {names}{more}")
    content = "\n".join(lines)[:MAX_CONTENT]
    return Progress(job.state, content, job.state in CANCELLABLE)


def who(sender: str | None) -> str:
    """Who sent a message or an answer, as Discord shows them: a mention for a Discord user
    (``discord:42``), the operator's CLI otherwise."""
    if sender and sender.startswith("discord:") and sender[8:].isdigit():
        return f"<@{sender[8:]}>"
    return "an operator" if sender in (None, "cli", "operator") else code(sender, 40)


def requester(job: JobView) -> str:
    """The job's requester as a mention (it pings only where a message allows it)."""
    user = job.origin.get("user_id")
    return f"<@{user}>" if user and str(user).isdigit() else "the requester"


def waiting_line(job: JobView) -> str:
    """What a waiting job waits for, and since when: "Waiting for @alice: Which colour? ·
    since 5 minutes ago", or "Waiting until <time>"."""
    since = f" · since {stamp(job.wait_since)}" if job.wait_since else ""
    if job.wait_for == "question":
        line = f"Waiting for {requester(job)}: {clean(job.wait_text or '', 300)}"
        if job.wait_until:
            line += f" · answer by {stamp(job.wait_until)}"
    elif job.wait_for == "message":
        line = f"Waiting for a message from {requester(job)} (mention me here, or `/job tell`)"
        if job.wait_until:
            line += f" until {stamp(job.wait_until)}"
    elif job.wait_until:
        line = f"Waiting until {stamp(job.wait_until, 'f')} ({stamp(job.wait_until)})"
    else:
        line = "Waiting" + (f": {code(job.reason, 200)}" if job.reason else "")
    return line + since


class Asked(Protocol):
    """A question as the bot shows it: the engine's question, which it reaches through a
    notice or an answer's outcome (a protocol, so the transport door stays small)."""

    @property
    def id(self) -> int: ...
    @property
    def key(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def choices(self) -> tuple[str, ...]: ...
    @property
    def allow_text(self) -> bool: ...
    @property
    def status(self) -> str: ...
    @property
    def expires_at(self) -> datetime | None: ...
    @property
    def closed_reason(self) -> str | None: ...
    @property
    def answer(self) -> str | None: ...
    @property
    def answered_by(self) -> str | None: ...


QUESTION_ICON = "💬"


def question(public_id: str, asked: Asked, user_id: int | None) -> str:
    """The question's message in the job's thread: asking (mentioning the requester), then, once
    it is answered or closed, what became of it."""
    head = f"{QUESTION_ICON} Job `{public_id}` asks"
    if asked.status == "open" and user_id:
        head = f"<@{user_id}> {head}"
    lines = [f"{head}: **{clean(asked.text, 1500)}**"]
    if asked.status == "open":
        how = "Choose below" if asked.choices else "Click **Answer**"
        if asked.choices and asked.allow_text:
            how += ", or click **Answer** to write your own"
        when = f" · answer by {stamp(asked.expires_at)}" if asked.expires_at else ""
        lines.append(f"{how}{when}.")
    elif asked.status == "answered":
        lines.append(
            f"✅ Answered by {who(asked.answered_by)}: **{clean(asked.answer or '', 300)}**"
        )
    elif asked.status == "timed_out":
        lines.append("⌛ Closed: no answer in time.")
    else:
        lines.append(f"⛔ Closed: {code(asked.closed_reason or 'the job moved on', 200)}.")
    return "\n".join(lines)[:MAX_CONTENT]


def answer_refused(result: str, why: str | None, asked: Asked) -> str:
    """The ephemeral answer to a click that did not answer the question."""
    if result == "already_answered":
        return (
            f"Already answered by {who(asked.answered_by)}: "
            f"**{clean(asked.answer or '', 200)}**. Nothing changed."
        )
    return f"This question is closed ({code(why or 'the job moved on', 200)}). Nothing changed."


def notice(job: JobView, row: Notice, user_id: int | None) -> str:
    """The reply that tells the requester how the job ended (or that it needs them)."""
    to = row.to_state
    who = f"<@{user_id}> " if user_id else ""
    text = f"{who}{ICONS[to]} Job `{job.public_id}` **{to.value}**"
    by = cancelled_by(job) if to is State.CANCELLED and row.actor is not Actor.SYSTEM else None
    if by:
        text += f" by {by}"
    if to in TERMINAL:
        text += f" after {seconds(duration(job))}"
        if job.attempts > 1 or job.failures:  # restarts and retries are part of the story
            text += f" · {job.attempt_line}"
    if by:
        text += f" ({code(row.reason, 300)})" if row.reason else ""
    elif row.reason:
        text += f": {code(row.reason, 300)}"
    if to is State.SUCCEEDED and job.result is not None:
        text += f"\nResult: `{summary(job.result, 500)}`"
    if to is State.UNKNOWN:
        text += f"\nSee `/job status {job.public_id}` for what you can do."
    return text[:MAX_CONTENT]


def cancelled_by(job: JobView) -> str | None:
    """Who asked a cancelled job to stop, as a notice says it ("the requester"), from the job's
    own record; None when the system did (a deadline, whose reason says so)."""
    asked = job.cancel_requested_by
    if asked is None or asked == "system":
        return None
    return "the requester" if asked == job.requester else "the operator"


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
    used = usage_line(job.usage)
    if used:
        detail.append(f"budget used: {used}")
    lines.append(" · ".join(detail))
    times = [f"submitted {stamp(job.created_at)}"]
    if job.started_at:
        times.append(f"started {stamp(job.started_at)}")
    if job.finished_at:
        times.append(f"finished {stamp(job.finished_at)} (took {seconds(duration(job))})")
    elif job.state is State.QUEUED and job.attempts:
        times.append(f"next try {stamp(job.run_at)}")
    lines.append(" · ".join(times))
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
            if e.topic == "question":  # a question asked, answered or closed: no state changed
                lines.append(f"• {stamp(e.at, 'T')} {QUESTION_ICON} question by {e.actor}{why}")
                continue
            source = e.from_state.value if e.from_state else "—"
            lines.append(f"• {stamp(e.at, 'T')} {source} → {e.to_state.value} by {e.actor}{why}")
    return "\n".join(lines)[:MAX_CONTENT]


def job_line(job: JobView, task: str) -> str:
    """One job in /job list."""
    label = f" — {clean(task, 60)}" if task else ""
    return (
        f"{ICONS[job.state]} `{job.public_id}` {job.kind} **{job.state.value}** "
        f"{stamp(job.created_at)}{label}"
    )


ANSWER_STATE = {
    State.QUEUED: "is queued",
    State.RUNNING: "is running",
    State.CANCELLING: "is stopping",
    State.SUCCEEDED: "**succeeded**",
    State.FAILED: "**failed**",
    State.CANCELLED: "was **cancelled**",
    State.WAITING: "is **waiting**",
    State.UNKNOWN: "ended **unknown**: it needs a look",
}
"""How the /summon answer words each state: the requester's first place to see it."""

WHERE = {
    "text": "Follow it in the thread on this message",
    "news": "Follow it in the thread on this message",
    "forum": "Follow it in its own post in this forum",
}


def answer(public_id: str, kind: str, state: State, channel_type: int) -> str:
    """The public answer to /summon, kept current with the job's state."""
    where = {0: WHERE["text"], 5: WHERE["news"], 15: WHERE["forum"]}.get(
        channel_type, "Follow it here"
    )
    said = ANSWER_STATE.get(state, f"is {state.value}")
    return f"Job `{public_id}` ({kind}) {said}. {where}, or with `/job status {public_id}`."
