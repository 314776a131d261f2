"""What people ask of a job: cancel it, or settle an ``unknown`` one.

A cancel moves the job with :func:`~jobs.engine.transition.transition` in one statement of its
own: its commit, which tells the worker, is the first thing the caller waits for. When a claim
commits under that statement, the row comes back ``raced`` and unmoved; the cancel then locks the
job and moves it again in a second statement of one transaction, which starts after the claim
and sees its attempt (docs/state-machine.md, "A cancel racing a claim"). A resolve, which may
grant an attempt with the move, always takes that locked path.
"""

from __future__ import annotations

from datetime import UTC, datetime

from jobs.engine import observe, policy
from jobs.engine.db import Conn
from jobs.engine.ids import normalize
from jobs.engine.moves import (
    CancelOutcome,
    CancelRequest,
    CancelResult,
    Moved,
    Policy,
    ResolveAs,
    Row,
)
from jobs.engine.state import TERMINAL, Actor, State, allowed
from jobs.engine.store.reads import Reads
from jobs.engine.transition import transition
from jobs.engine.views import JobView
from jobs.errors import IllegalTransition, NotAllowed, UnknownJob


class Requests(Reads):
    """``cancel`` and ``resolve``."""

    async def _request(
        self,
        conn: Conn,
        public_id: str,
        rule: Policy,
        row: Row,
        *,
        cancel: CancelRequest | None = None,
        data: dict[str, object] | None = None,
    ) -> tuple[Moved, JobView]:
        """Lock the job, move it along ``rule``, and read it as it now is (in ``conn``'s open
        transaction). Raises UnknownJob."""
        job_id = await self.sql.fetchval(conn, "job_lock_by_public_id", public_id=public_id)
        if job_id is None:
            raise UnknownJob(public_id)
        [moved] = await transition(
            conn,
            rule,
            [Row(job_id, reason=row.reason, run_at=row.run_at)],
            cancel=cancel,
            data=data,
        )
        record = await self.sql.fetchrow(conn, "job_get_by_id", id=job_id)
        assert record is not None  # locked by this transaction
        return moved, JobView.from_record(record)

    async def cancel(
        self,
        public_id: str,
        *,
        actor: Actor = Actor.REQUESTER,
        by: str,
        reason: str | None = None,
        force: bool = False,
    ) -> CancelOutcome:
        """Ask a job to stop; idempotent, and truthful about what happened.

        ``queued`` and ``waiting`` become ``cancelled`` at once (its open questions closed);
        ``running`` becomes ``cancelling`` and the attempt is told; with ``force`` (operators)
        anything not terminal becomes ``cancelled``. The reason is the requester's own words (or
        none); who asked is ``cancel_requested_by`` and the event's actor.

        Raises:
            UnknownJob: no such job. NotAllowed: a forced cancel by anyone but an operator.
            IllegalTransition: the job is in a state no cancel moves (``unknown``, unforced).
        """
        if force and actor is not Actor.OPERATOR:
            raise NotAllowed("only an operator can force a cancel")
        rule = policy.FORCE_CANCEL if force else policy.cancel(actor)
        why = reason or None
        if force:
            why = f"{reason} (forced)" if reason else "forced"
        request = CancelRequest(by=by, reason=reason or f"requested by {actor.value}")
        # An operator's cancel names the person on its event, as a resolve does.
        data: dict[str, object] | None = {"by": by} if actor is Actor.OPERATOR else None
        public_id = normalize(public_id)
        async with self.pool.acquire() as conn:
            job_id = await self.sql.fetchval(conn, "job_id_by_public_id", public_id=public_id)
            if job_id is None:
                raise UnknownJob(public_id)
            [moved] = await transition(
                conn, rule, [Row(job_id, reason=why)], cancel=request, data=data
            )
            # A job that ended cancelled had its questions closed by the move (after the move's
            # own commit, which told the worker first: an answer in between finds the job
            # ended and is refused as closed all the same).
            if moved.raced:
                async with conn.transaction():
                    moved, job = await self._request(
                        conn, public_id, rule, Row(0, reason=why), cancel=request, data=data
                    )
            else:
                record = await self.sql.fetchrow(conn, "job_get_by_id", id=job_id)
                if record is None:  # pruned by an operator meanwhile
                    raise UnknownJob(public_id)
                job = JobView.from_record(record)
        if moved.ok:
            done = (
                CancelResult.CANCELLED
                if moved.target is State.CANCELLED
                else CancelResult.CANCELLING
            )
            return observe.cancel_answered(CancelOutcome(job, done, True))
        # Not moved: answered from the job as read after the move's statement, which a worker's
        # end may have carried from cancelling to its end meanwhile (then too late, truly).
        if moved.source in TERMINAL or job.state in TERMINAL:
            return observe.cancel_answered(CancelOutcome(job, CancelResult.TOO_LATE, False))
        if moved.source is State.CANCELLING:
            answer = CancelOutcome(job, CancelResult.ALREADY_CANCELLING, False)
            return observe.cancel_answered(answer)
        raise IllegalTransition(job.public_id, moved.source.value, "cancelled", actor.value)

    async def resolve(
        self,
        public_id: str,
        *,
        actor: Actor,
        outcome: str,
        note: str,
        by: str,
    ) -> JobView:
        """Settle an ``unknown`` job as succeeded, failed, cancelled or a retry.

        Raises:
            NotAllowed: a requester whose kind does not allow requester resolution.
            IllegalTransition: the job is not ``unknown``.
        """
        try:
            target = policy.RESOLVE_TARGETS[ResolveAs(outcome)]
        except ValueError:
            raise ValueError("resolve as one of: succeeded, failed, retry, cancelled") from None
        job = await self.get(public_id)
        if actor is Actor.REQUESTER and not self.registry.get(job.kind).requester_may_resolve:
            raise NotAllowed(f"jobs of kind {job.kind} can only be resolved by an operator")
        if target not in allowed(State.UNKNOWN, actor):
            raise NotAllowed(f"a {actor.value} cannot resolve a job as {outcome}")
        # Who resolved it is the event's data (``by``), shown by each transport its own way:
        # a Discord user's raw id does not belong in the reason every surface prints.
        text = f"resolved as {outcome}: {note}"
        run_at = datetime.now(UTC) if target is State.QUEUED else None
        async with self.pool.acquire() as conn, conn.transaction():
            moved, job = await self._request(
                conn,
                job.public_id,
                policy.resolve(actor, target),
                Row(0, reason=text, run_at=run_at),
                data={"note": note, "by": by},
            )
            if moved.ok and target is State.QUEUED:
                # A person asked for one more run: the claim never starts an attempt beyond
                # max_attempts, so grant it.
                await self.sql.execute(conn, "job_grant_attempt", id=job.id)
        if not moved.ok:
            raise IllegalTransition(job.public_id, moved.source.value, target.value, actor.value)
        return await self.get(job.public_id)  # after the grant: as it now is
