"""The worker's protocol: claim due jobs, keep their leases, record progress and how attempts
ended. Each write is fenced by the attempt: it lands only while that attempt holds the lease."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from jobs.engine import policy
from jobs.engine.db import Conn
from jobs.engine.line import Fairness, KindCaps
from jobs.engine.moves import AttemptOutcome, Finish, Moved, Policy, Verdict
from jobs.engine.state import Actor, State
from jobs.engine.store.base import Base
from jobs.engine.transition import claim, transition
from jobs.engine.views import Claim
from jobs.errors import StaleTransition


def _policy(finish: Finish) -> Policy:
    if finish.outcome is None:
        raise ValueError("a finish names how the attempt ended")
    return policy.STOP_MID_RUN if finish.mid_run else policy.FINISH[finish.outcome]


class WorkerVerbs(Base):
    """``claim``, ``wait_for_jobs``, ``heartbeat``, ``set_progress``, ``finish`` and
    ``refresh_statistics``."""

    async def claim(
        self,
        worker: str,
        *,
        limit: int,
        lease_seconds: float,
        kinds: Sequence[str] | None = None,
        fairness: Fairness | None = None,
        waiting_pid: int | None = None,
        unlist_at: int = 0,
    ) -> list[Claim]:
        """Claim up to ``limit`` due jobs with ``FOR UPDATE SKIP LOCKED``; one attempt each, in
        the claim's order and within the limits of each kind (declared by the kinds this store
        knows, or set by an operator) and of ``fairness``.

        One statement, no BEGIN/COMMIT; its rows are all the runtime needs to run them.

        Args:
            waiting_pid: the worker's listing as waiting (:meth:`wait_for_jobs`), if any, which
                the claim takes away when it moves at least ``unlist_at`` jobs.
        """
        # One statement, one after another from a worker's claim loop: on the lane's connection
        # (jobs/engine/lane.py), which spares each claim the pool's checkout.
        caps = [
            KindCaps(k, spec.concurrency, spec.starts_per_minute)
            for k in kinds or ()
            if (spec := self.registry.find(k)) is not None
            and (spec.concurrency is not None or spec.starts_per_minute is not None)
        ]
        conn = await self.claim_lane.take()
        try:
            claims = await claim(
                conn,
                worker=worker,
                limit=limit,
                lease_seconds=lease_seconds,
                kinds=kinds,
                caps=caps,
                fairness=fairness or self.fairness,
                waiting_pid=waiting_pid,
                unlist_at=unlist_at,
                lone=self.lone_claims,
            )
        except BaseException:
            await self.claim_lane.put(conn, failed=True)
            raise
        await self.claim_lane.put(conn)
        return claims

    async def wait_for_jobs(self, worker: str, listener_pid: int) -> None:
        """List ``worker`` as waiting for work: submits wake it (``NOTIFY errand_job``) from now.

        ``listener_pid`` is the backend of the worker's LISTEN connection. Returns once every
        submit that did not see the listing has committed: a claim made after this call sees
        their jobs (docs/state-machine.md, "Waking a worker").
        """
        await self.sql.execute(self.pool, "worker_waiting_insert", worker=worker, pid=listener_pid)

    async def stop_waiting(self, listener_pid: int) -> None:
        """Take a worker's listing as waiting away (it stops, or its listener was replaced)."""
        await self.sql.execute(self.pool, "worker_waiting_delete", pid=listener_pid)

    async def refresh_statistics(self) -> bool:
        """ANALYZE the job table when its statistics miss a large change; True when it ran.

        The claim's plan depends on them: with a backlog they do not know of (a burst of
        submits since autovacuum's last analyze), the planner sorts every queued job on each
        claim instead of reading the first ones off ``job_claimable``. One worker at a time.
        """
        async with self.pool.acquire() as conn:
            if not await self.sql.fetchval(conn, "job_statistics_stale"):
                return False
            async with conn.transaction():
                if not await self.sql.fetchval(conn, "job_analyze_lock"):
                    return False  # another worker is at it
                await conn.execute("ANALYZE job")
        return True

    async def heartbeat(
        self, worker: str, lease_seconds: float, attempt_ids: Sequence[int]
    ) -> dict[int, Verdict]:
        """Renew all of a worker's leases in one statement.

        Returns:
            For each attempt the worker runs that must stop: ``cancelling`` (a cancel was
            requested) or ``lost`` (the attempt no longer holds the lease).
        """
        rows = await self.sql.fetch(
            self.pool,
            "attempt_heartbeat",
            worker=worker,
            lease_seconds=lease_seconds,
            attempt_ids=list(attempt_ids),
        )
        return {
            r["attempt_id"]: "cancelling" if r["state"] == State.CANCELLING else "lost"
            for r in rows
        }

    async def set_progress(self, job_id: int, attempt_id: int, progress: dict[str, Any]) -> bool:
        """Record progress; False when the attempt no longer holds the lease."""
        row = await self.sql.fetchrow(
            self.pool, "job_set_progress", job_id=job_id, attempt_id=attempt_id, progress=progress
        )
        return row is not None

    async def finish(self, finishes: Sequence[Finish]) -> list[Moved]:
        """Record how attempts ended, one statement per kind of end.

        A finish from an attempt that no longer holds the lease changes nothing and is kept as
        an ignored event; the returned ``Moved`` says which rows moved.
        """
        groups: dict[Policy, list[Finish]] = {}
        parks: list[Finish] = []
        for f in finishes:
            if f.outcome is AttemptOutcome.PARKED:
                parks.append(f)
            else:
                groups.setdefault(_policy(f), []).append(f)
        if len(groups) == 1 and not parks:
            # The usual batch (all succeeded): one statement, which locks its rows in id order
            # itself; no BEGIN/COMMIT.
            [(rule, group)] = groups.items()
            async with self.pool.acquire() as conn:
                return await transition(conn, rule, group)
        out: list[Moved] = []
        async with self.pool.acquire() as conn, conn.transaction():
            # One statement per kind of end would lock the jobs group by group, not in id
            # order, and could deadlock with another batch; lock them all in id order first.
            await self._lock(conn, sorted({f.job_id for f in finishes}))
            for rule, group in groups.items():
                out += await transition(conn, rule, group)
            if parks:
                out += await self._park(conn, parks)
        return out

    async def _park(self, conn: Conn, parks: list[Finish]) -> list[Moved]:
        """Park attempts whose handler waits (the jobs locked in ``conn``'s transaction): record
        what each waits for, then move it to ``waiting``; or, when what it waits for came while
        it was parking (an answer, a message, its time), to ``queued``, due at once."""
        waits = [f.wait for f in parks]
        if any(w is None for w in waits):
            raise ValueError("a park names what its handler waits for")
        records = await self.sql.fetch(
            conn,
            "job_park_prepare",
            job_ids=[f.job_id for f in parks],
            attempt_ids=[f.attempt_id for f in parks],
            wait_fors=[w.wait_for.value for w in waits if w is not None],
            keys=[w.key for w in waits if w is not None],
            texts=[w.text for w in waits if w is not None],
            untils=[w.until for w in waits if w is not None],
            numbers=[w.number for w in waits if w is not None],
            afters=[w.after for w in waits if w is not None],
        )
        came = {r["id"]: r["at"] for r in records if r["satisfied"]}
        parked = [f for f in parks if f.job_id not in came]
        resumed = [replace(f, run_at=came[f.job_id]) for f in parks if f.job_id in came]
        moved = await transition(conn, policy.FINISH[AttemptOutcome.PARKED], parked)
        return moved + await transition(conn, policy.PARKED_SATISFIED, resumed)

    async def _lock(self, conn: Conn, job_ids: list[int]) -> None:
        await self.sql.execute(conn, "job_lock_many", ids=job_ids)

    async def finish_one(self, finish: Finish) -> Moved:
        """Record one attempt's end. Raises StaleTransition when it no longer holds the lease."""
        [moved] = await self.finish([finish])
        if not moved.ok:
            raise StaleTransition(
                str(finish.job_id), moved.source.value, str(finish.outcome), Actor.WORKER.value
            )
        return moved
