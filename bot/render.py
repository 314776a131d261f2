"""What users read: the progress message of each state, the notices, the /summon answer, and
the words and marks the status page (:mod:`bot.status_page`) and questions
(:mod:`bot.question_text`) share.

Pure functions of the job record (no I/O), so every format is tested without Discord. Text
that came from users (the task) is escaped for markdown and mentions, and cut to Discord's limits.
Times use Discord timestamps (``<t:...:R>``), which clients keep current without edits.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import discord

from jobs.transport import Actor, JobView, Notice, State, scrub

MAX_CONTENT = 2000
NO_PINGS = discord.AllowedMentions.none()
"""Allowed mentions that ping nobody, for every message that must not notify anyone."""
BAR_WIDTH = 12
DELAYED = timedelta(seconds=1)
"""A queued job due this much after its submit was put off (``when:``), not merely waiting."""

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

CANCEL_STATES = frozenset({State.CANCELLING, State.CANCELLED})
"""States a cancel moves a job to (its event's person is the job's ``cancel_requested_by``)."""

SILENT_AFTER = timedelta(seconds=15)
"""A running job whose worker was not heard from for this long (three heartbeats at the
default 5 s) says so: its worker may be gone, and the job is taken back once its lease ends."""

TRANSPORT = "discord"
"""How the record names a Discord user: ``discord:<user id>`` (bot.commands.shared)."""

EMPTY_TASK = "Say what to do, for example `/summon task:count to five`."
"""The answer to a /summon whose task is blank."""

NOT_TEXT = (
    "The task or params contain a NUL character or a lone surrogate (such as \\ud800), which "
    "is not text; remove it."
)
"""The answer to a /summon whose task or params hold what no message or database can."""

NOT_YOURS = "Only the requester or an operator can cancel job `{id}`."
"""The answer to a cancel by someone else (operators: docs/discord.md, "Who may see and
moderate a job")."""


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


def wall_time(job: JobView, now: datetime | None = None) -> float:
    """Seconds from the submit to the end (or now): every wait counted, in the queue, for a
    retry, while nothing ran, while it sat unknown."""
    end = job.finished_at or now or datetime.now(UTC)
    return max(0.0, (end - job.created_at).total_seconds())


def times(job: JobView, now: datetime | None = None) -> str:
    """How long an ended job took, its run time (its attempts running) and its wall time
    (from the submit), each named: ``Run time 4.0 s · wall time 15.0 s``."""
    wall = f"wall time {seconds(wall_time(job, now))}"
    if job.attempts == 0:
        return f"Did not run · {wall}"
    if job.run_seconds is None:  # a read without its attempts
        return wall.capitalize()
    return f"Run time {seconds(job.run_seconds)} · {wall}"


def person(by: str | None, actor: Actor | str) -> str:
    """Who did something, as Discord shows a user: the mention of a Discord user the record
    names (``discord:42``; it pings nobody, every message limits its mentions), else the role
    they acted in, with the name the record gives ("an operator (cli)")."""
    if by:
        transport, _, user = by.partition(":")
        if transport == TRANSPORT and user.isdigit():
            return f"<@{user}>"
    role = {"requester": "the requester", "operator": "an operator"}.get(str(actor), str(actor))
    return f"{role} ({clean(by, 40)})" if by and by != str(actor) else role


def silent_since(job: JobView, now: datetime | None = None) -> datetime | None:
    """When the worker of a running job was last heard from, if longer ago than
    :data:`SILENT_AFTER`; else None."""
    if job.state not in (State.RUNNING, State.CANCELLING) or job.heartbeat_at is None:
        return None
    now = now or datetime.now(UTC)
    return job.heartbeat_at if now - job.heartbeat_at > SILENT_AFTER else None


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


def count(number: int, noun: str) -> str:
    """``1 step``, ``2 steps``, ``1,234 tokens``."""
    return f"{number:,} {noun if number == 1 else noun + 's'}"


def usage_line(usage: dict[str, Any], *, steps: bool = True) -> str:
    """Budget use so far: tokens, tool calls, and steps begun unless ``steps`` is False (the
    progress line counts them already: two counts of steps would disagree, the step under way
    being begun but not done)."""
    parts = []
    if usage.get("tokens"):
        parts.append(count(int(usage["tokens"]), "token"))
    if usage.get("tool_calls"):
        parts.append(count(int(usage["tool_calls"]), "tool call"))
    if steps and usage.get("steps"):
        parts.append(count(int(usage["steps"]), "step"))
    return " · ".join(parts)


def counts_steps(job: JobView) -> bool:
    """Whether the job's progress line counts steps (then its usage does not repeat them)."""
    return bool(job.progress_line) and str((job.progress or {}).get("unit") or "step") == "step"


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
    used = usage_line(job.usage, steps=not counts_steps(job))
    shown = progress_bar_line(job)
    if job.state is State.QUEUED:
        if job.attempts:  # a retry wait, or released by a worker that stopped
            lines.append(
                f"Runs again {stamp(job.run_at)} · {attempt}"
                + (f" · last try: {code(job.reason, 200)}" if job.reason else "")
            )
        elif job.run_at > job.created_at + DELAYED:
            lines.append(f"Scheduled to start {stamp(job.run_at)} ({stamp(job.run_at, 'f')})")
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
        silent = silent_since(job)
        if silent is not None:  # what is known of a worker that may be gone (a SIGKILL)
            lines.append(
                f"⚠️ Its worker was last heard from {stamp(silent)}; if it stays silent, the "
                "job is taken back when its lease ends."
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
        lines.append(" · ".join(x for x in (times(job), attempt, used) if x))
        by = cancelled_by(job) if job.state is State.CANCELLED else None
        if by:
            why = f": {code(job.reason, 300)}" if job.reason else ""
            lines.append(f"Cancelled by {by}{why}")
        elif job.reason:
            lines.append(f"Reason: {code(job.reason, 300)}")
        if job.state is State.SUCCEEDED and job.result is not None:
            lines.append(f"Result: `{summary(job.result, 500)}`")
        error = summary(job.error, 500)
        # Said once: a reason that already holds the error (or is held by it) says it all.
        said = job.reason and (job.reason in error or error in job.reason)
        if job.state is State.FAILED and error and not said:
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


QUESTION_ICON = "💬"


def notice(job: JobView, row: Notice, user_id: int | None) -> str:
    """The reply that tells the requester how the job ended (or that it needs them): what
    happened, who did it and why on its first line (the line a thread's preview shows), then
    how long it took, then its result."""
    to = row.to_state
    who = f"<@{user_id}> " if user_id else ""
    text = f"{who}{ICONS[to]} Job `{job.public_id}` **{to.value}**"
    if row.from_state is State.UNKNOWN and row.by:  # a person settled it
        text += f", resolved by {person(row.by, row.actor)}"
        why = row.note if row.note is not None else row.reason
        text += f": {clean(why, 300)}" if why else ""
    elif to is State.CANCELLED and row.actor is not Actor.SYSTEM and cancelled_by(job):
        text += f" by {cancelled_by(job)}"
        text += f" ({code(row.reason, 300)})" if row.reason else ""
    elif row.reason:
        text += f": {code(row.reason, 300)}"
    if to.terminal:
        text += f"\n{times(job)}"
        if job.attempts > 1 or job.failures:  # restarts and retries are part of the story
            text += f" · {job.attempt_line}"
    if to is State.SUCCEEDED and job.result is not None:
        text += f"\nResult: `{summary(job.result, 500)}`"
    if to is State.UNKNOWN:
        text += f"\nSee `/job status {job.public_id}` for what you can do."
    return text[:MAX_CONTENT]


def cancelled_by(job: JobView) -> str | None:
    """Who asked a cancelled job to stop, from the job's own record: their mention, or their
    role ("an operator (cli)"); None when the system did (a deadline, whose reason says so)."""
    asked = job.cancel_requested_by
    if asked is None or asked == "system":
        return None
    return person(asked, "requester" if asked == job.requester else "operator")


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


def params_of_another_kind(kind: str, params: list[str], owner: str) -> str:
    """The answer to /summon params that the chosen kind lacks and another kind takes."""
    names = ", ".join(f"`{code(p, 40)}`" for p in params)
    return (
        f"`{code(kind, 40)}` jobs take no {names}; `{code(owner, 40)}` jobs do: add "
        f"`kind:{code(owner, 40)}` to your /summon."
    )


def answer(
    public_id: str, kind: str, state: State, channel_type: int, *, due: datetime | None = None
) -> str:
    """The public answer to /summon, kept current with the job's state; ``due``: a delayed
    job's start, shown in Discord's timestamp markup (each reader's own time and zone)."""
    where = {0: WHERE["text"], 5: WHERE["news"], 15: WHERE["forum"]}.get(
        channel_type, "Follow it here"
    )
    said = ANSWER_STATE.get(state, f"is {state.value}")
    if due is not None and state is State.QUEUED:
        said = f"is scheduled to start {stamp(due)} ({stamp(due, 'f')})"
    return f"Job `{public_id}` ({kind}) {said}. {where}, or with `/job status {public_id}`."
