"""Reading jobs: one job, one job with its whole record, recent jobs, an operator's search."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from jobs.engine.ids import normalize
from jobs.engine.mail import Message, Question
from jobs.engine.state import State
from jobs.engine.store.base import Base
from jobs.engine.views import (
    AttemptView,
    EventView,
    JobFilter,
    JobPage,
    JobStatus,
    JobView,
    jsonable,
)
from jobs.errors import UnknownJob


class Reads(Base):
    """``get``, ``status``, ``list_jobs``, ``search`` and ``count``."""

    async def get(self, public_id: str) -> JobView:
        """One job. Raises UnknownJob."""
        record = await self.sql.fetchrow(self.pool, "job_get", public_id=normalize(public_id))
        if record is None:
            raise UnknownJob(public_id)
        return JobView.from_record(record)

    async def status(self, public_id: str) -> JobStatus:
        """A job with its attempts, events, steps and assets, as of one moment. Raises
        UnknownJob."""
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read"):
            record = await self.sql.fetchrow(conn, "job_get", public_id=normalize(public_id))
            if record is None:
                raise UnknownJob(public_id)
            job_id = record["id"]
            attempts = await self.sql.fetch(conn, "attempt_list_by_job", job_id=job_id)
            events = await self.sql.fetch(conn, "event_list_by_job", job_id=job_id)
            steps = await self.sql.fetch(conn, "step_list_by_job", job_id=job_id)
            assets = await self.sql.fetch(conn, "asset_list_by_job", job_id=job_id)
            questions = await self.sql.fetch(conn, "question_list_by_job", job_id=job_id)
            messages = await self.sql.fetch(conn, "message_list_by_job", job_id=job_id)
        return JobStatus(
            job=JobView.from_record(record),
            attempts=[AttemptView.from_record(a) for a in attempts],
            events=[EventView.from_record(e) for e in events],
            steps=[jsonable(s) for s in steps],
            assets=[jsonable(a) for a in assets],
            questions=[Question.from_record(q) for q in questions],
            messages=[Message.from_record(m) for m in messages],
        )

    async def list_jobs(
        self,
        *,
        states: Sequence[State] | None = None,
        kind: str | None = None,
        requester: str | None = None,
        newer_than_seconds: float | None = None,
        origin_group: str | None = None,
        limit: int = 50,
    ) -> list[JobView]:
        """Recent jobs, newest first."""
        records = await self.sql.fetch(
            self.pool,
            "job_list",
            states=[s.value for s in states] if states else None,
            kind=kind,
            requester=requester,
            newer_than_seconds=newer_than_seconds,
            origin_group=origin_group,
            limit=limit,
        )
        return [JobView.from_record(r) for r in records]

    async def search(
        self,
        where: JobFilter,
        *,
        after: tuple[datetime, int] | None = None,
        newest_first: bool = True,
        limit: int = 50,
    ) -> JobPage:
        """One page of the jobs ``where`` matches, after the cursor ``after``."""
        records = await self.sql.fetch(
            self.pool,
            "job_search_newest" if newest_first else "job_search_oldest",
            **where.params(),
            after_at=after[0] if after else None,
            after_id=after[1] if after else None,
            limit=limit + 1,  # one more: whether a next page exists
        )
        jobs = [JobView.from_record(r) for r in records[:limit]]
        more = len(records) > limit and jobs
        return JobPage(jobs, (jobs[-1].created_at, jobs[-1].id) if more else None)

    async def count(self, where: JobFilter, *, cap: int) -> int:
        """How many jobs ``where`` matches, counted up to ``cap``."""
        return int(
            await self.sql.fetchval(self.pool, "job_search_count", **where.params(), cap=cap)
        )
