"""Reading jobs: one job, one job with its whole record, recent jobs."""

from __future__ import annotations

from collections.abc import Sequence

from jobs.engine.ids import normalize
from jobs.engine.state import State
from jobs.engine.store.base import Base
from jobs.engine.views import AttemptView, EventView, JobStatus, JobView, jsonable
from jobs.errors import UnknownJob


class Reads(Base):
    """``get``, ``status`` and ``list_jobs``."""

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
        return JobStatus(
            job=JobView.from_record(record),
            attempts=[AttemptView.from_record(a) for a in attempts],
            events=[EventView.from_record(e) for e in events],
            steps=[jsonable(s) for s in steps],
            assets=[jsonable(a) for a in assets],
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
