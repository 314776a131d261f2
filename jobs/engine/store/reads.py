"""Reading jobs: one job, one job with its whole record, recent jobs, an operator's search."""

from __future__ import annotations

from collections.abc import Sequence

from jobs.engine.ids import normalize
from jobs.engine.mail import Message, Question
from jobs.engine.state import State
from jobs.engine.store.base import Base
from jobs.engine.views import (
    SEARCH_SCOPE,
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
        after: int | None = None,
        newest_first: bool = True,
        limit: int = 50,
        scope: int = SEARCH_SCOPE,
    ) -> JobPage:
        """One page of the jobs ``where`` matches, after the cursor ``after`` (an id).

        A text search reads at most ``scope`` jobs the other filters match from the cursor on;
        when it found fewer than a page there, the page ends early and its cursor is the last
        job it read, so the next page searches on from there.
        """
        text = where.literal_text
        async with self.pool.acquire() as conn, conn.transaction(readonly=True):
            # Planned for these values: a filter left empty then drops out of the plan, and the
            # plan uses that filter's index (a generic plan could use none).
            await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
            if text is None:
                records = await self.sql.fetch(
                    conn,
                    "job_search_newest" if newest_first else "job_search_oldest",
                    **where.params(),
                    after=after,
                    limit=limit + 1,  # one more: whether a next page exists
                )
                jobs = [JobView.from_record(r) for r in records[:limit]]
                more = len(records) > limit and jobs
                return JobPage(jobs, jobs[-1].id if more else None)
            records = await self.sql.fetch(
                conn,
                "job_search_text_newest" if newest_first else "job_search_text_oldest",
                **where.params(),
                text=text,
                after=after,
                scope=scope,
                limit=limit + 1,
            )
        hits = [r for r in records if r["hit"]]
        jobs = [JobView.from_record(r) for r in hits[:limit]]
        searched = int(records[-1]["searched"]) if records else 0
        if len(hits) > limit:
            return JobPage(jobs, jobs[-1].id, int(hits[limit - 1]["searched"]))
        # The whole scope was read: what lies beyond it is the next page's to search.
        last = records[-1]["id"] if records and searched >= scope else None
        return JobPage(jobs, last, searched)

    async def count(self, where: JobFilter, *, cap: int, scope: int = SEARCH_SCOPE) -> int:
        """How many jobs ``where`` matches, counted up to ``cap`` (with a text, among the
        ``scope`` newest the other filters match)."""
        text = where.literal_text
        async with self.pool.acquire() as conn, conn.transaction(readonly=True):
            await conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
            if text is None:
                found = await self.sql.fetchval(conn, "job_search_count", **where.params(), cap=cap)
            else:
                found = await self.sql.fetchval(
                    conn,
                    "job_search_text_count",
                    **where.params(),
                    text=text,
                    scope=scope,
                    cap=cap,
                )
        return int(found)
