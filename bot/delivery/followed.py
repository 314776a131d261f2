"""One job this process delivers: what its actor has heard since its round began, and when its
progress message was last edited. The loop keeps one per job; a round reads and sets it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass(eq=False)
class Followed:
    """A job with an actor in this process."""

    job_id: int
    public_id: str
    news: asyncio.Event = field(default_factory=asyncio.Event)
    """Something changed since the round began: its progress, or its state."""
    moved: asyncio.Event = field(default_factory=asyncio.Event)
    """Its state may have changed (a notice came due, or a request was made): a pause between
    edits is cut short when the job ended."""
    last_edit: float | None = None
    """When this process last edited (or posted) its progress message, monotonic."""
    task: asyncio.Task[None] | None = None
    in_round: bool = False
    """Its actor is in a round, which a stop lets finish."""

    def hear(self, *, moved: bool) -> None:
        """News for the actor: another round follows the one under way."""
        self.news.set()
        if moved:
            self.moved.set()

    def listen(self) -> None:
        """A round begins: what it reads is newer than every news so far."""
        self.news.clear()
        self.moved.clear()
