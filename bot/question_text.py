"""What a question looks like on Discord: its message in the job's thread, and the answer
to a click that did not answer it.

Pure functions (no I/O), built from the words and marks of :mod:`bot.render`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from bot.render import MAX_CONTENT, QUESTION_ICON, clean, code, stamp, who


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
