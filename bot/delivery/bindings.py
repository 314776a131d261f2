"""A job's Discord binding as one typed row, and the statements that read and write it.

The ``discord_binding`` row holds what delivery learned (the thread, the progress message and
what it shows, the render lease, what the /summon answer shows); where the job was summoned is
its origin, the one record of it, read here once into an :class:`Origin`. A :class:`Binding`
comes from the statement that takes the job's render lease and goes, unchanged in shape, to the
owner of each message: each write returns the binding it made (``dataclasses.replace``), never a
row to look up again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import asyncpg

from bot.queries import sql
from jobs.transport import State


def _int(value: Any) -> int | None:
    return int(value) if value not in (None, "") else None


@dataclass(frozen=True)
class Origin:
    """Where a job was summoned, as the /summon handler recorded it in ``job.origin``."""

    guild_id: int | None
    channel_id: int
    channel_type: int
    """Discord's channel type number (0 text, 1 DM, 5 news, 11 thread, 15 forum...)."""
    user_id: int | None
    """The requester, pinged by the job's notices."""
    task: str

    @classmethod
    def of(cls, origin: Mapping[str, Any]) -> Origin:
        return cls(
            guild_id=_int(origin.get("guild_id")),
            channel_id=int(origin["channel_id"]),
            channel_type=int(origin.get("channel_type") or 0),
            user_id=_int(origin.get("user_id")),
            task=str(origin.get("task") or ""),
        )


@dataclass(frozen=True)
class Binding:
    """One job's binding, as the round that holds its render lease sees it."""

    job_id: int
    origin: Origin
    summoned_at: datetime
    """When the job was submitted (its /summon answer follows within moments)."""
    anchor_message_id: str | None
    """The /summon answer: the message a thread starts from."""
    thread_id: str | None
    """The thread (or DM, or the thread it was summoned in) that follows the job."""
    progress_message_id: str | None
    progress_posted_at: datetime | None
    progress_state: State | None
    """The state the progress message shows."""
    progress_hash: str | None
    """A hash of what the progress message shows (an unchanged rendering is never sent)."""
    answer_state: State | None
    """The state the /summon answer was last recorded to show."""

    @property
    def shows_end(self) -> bool:
        """Whether the progress message shows the job's end (a terminal state)."""
        return self.progress_state is not None and self.progress_state.terminal

    @classmethod
    def from_record(cls, r: asyncpg.Record) -> Binding:
        return cls(
            job_id=r["job_id"],
            origin=Origin.of(r["origin"]),
            summoned_at=r["summoned_at"],
            anchor_message_id=r["anchor_message_id"],
            thread_id=r["thread_id"],
            progress_message_id=r["progress_message_id"],
            progress_posted_at=r["progress_posted_at"],
            progress_state=State(r["progress_state"]) if r["progress_state"] else None,
            progress_hash=r["progress_hash"],
            answer_state=State(r["answer_state"]) if r["answer_state"] else None,
        )

    def age(self) -> float:
        """Seconds since the job was submitted."""
        return (datetime.now(UTC) - self.summoned_at).total_seconds()


class Bindings:
    """The ``discord_binding`` statements of delivery; each owner calls those of its columns."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def take(self, job_id: int, owner: str, lease_seconds: float) -> Binding | None:
        """Take or renew the job's render lease (making its binding if need be); None when
        another process holds it, or the job is gone."""
        record = await sql.fetchrow(
            self.pool,
            "binding_take_render",
            job_id=job_id,
            owner=owner,
            lease_seconds=lease_seconds,
        )
        return Binding.from_record(record) if record is not None else None

    async def release_all(self, owner: str) -> None:
        """Give up every render lease of ``owner`` (it is stopping)."""
        await sql.execute(self.pool, "binding_release_render", owner=owner)

    async def set_thread(self, binding: Binding, thread_id: str) -> Binding:
        await sql.execute(
            self.pool, "binding_set_thread", job_id=binding.job_id, thread_id=thread_id
        )
        return replace(binding, thread_id=thread_id)

    async def set_progress_message(
        self,
        binding: Binding,
        message_id: str,
        state: State,
        digest: str,
        *,
        thread_id: str | None = None,
    ) -> Binding:
        """A new progress message (the first, or one posted again); a forum post's first
        message also opens the post, ``thread_id``."""
        posted_at = await sql.fetchval(
            self.pool,
            "binding_set_progress_message",
            job_id=binding.job_id,
            thread_id=thread_id,
            message_id=message_id,
            state=state.value,
            hash=digest,
        )
        return replace(
            binding,
            thread_id=thread_id or binding.thread_id,
            progress_message_id=message_id,
            progress_posted_at=posted_at,
            progress_state=state,
            progress_hash=digest,
        )

    async def record_edit(self, binding: Binding, state: State, digest: str) -> Binding:
        """An edit of the progress message; the binding unchanged when a terminal state was
        recorded meanwhile (nothing follows it)."""
        written = await sql.fetchval(
            self.pool, "binding_record_edit", job_id=binding.job_id, state=state.value, hash=digest
        )
        if written is None:
            return binding
        return replace(binding, progress_state=state, progress_hash=digest)

    async def set_answer_state(self, job_id: int, state: State) -> None:
        await sql.execute(self.pool, "binding_set_answer_state", job_id=job_id, state=state.value)

    async def partition_of(self, public_id: str) -> tuple[int, int] | None:
        """A bound job's internal id and delivery partition, or None (not a Discord job's)."""
        record = await sql.fetchrow(self.pool, "binding_by_public_id", public_id=public_id)
        return (record["job_id"], record["partition"]) if record is not None else None
