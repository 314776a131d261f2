"""Cancels, claims, finishes and the reaper at the same moment, checked against a table of this
test's own (hypothesis against the real PostgreSQL).

tests/integration/test_stateful.py runs one request at a time. Here each round runs several at
once (``asyncio.gather``, each on its own pool connection), so they race for the same rows the
way workers, people and reapers do. The order PostgreSQL chose is read back from the events
(each job's row lock orders its events), and every request's answer is checked against it and
against :data:`MAY` and the per-request tables below, written from docs/state-machine.md
without importing ``jobs.engine.state``: if the engine's table drifted, this would disagree.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import asyncpg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.engine.moves import AttemptOutcome, CancelOutcome, CancelResult, Finish, Moved
from jobs.engine.state import Actor
from jobs.engine.store import JobStore
from jobs.errors import IllegalTransition

LIVE = {"running", "cancelling"}
TERMINAL = {"succeeded", "failed", "cancelled"}

MAY: dict[str, set[tuple[str, str]]] = {
    "worker": {
        ("queued", "running"),
        ("running", "succeeded"),
        ("running", "failed"),
        ("running", "queued"),
        ("running", "unknown"),
        ("cancelling", "succeeded"),
        ("cancelling", "cancelled"),
    },
    "requester": {("queued", "cancelled"), ("running", "cancelling")},
    "operator": {
        ("queued", "cancelled"),
        ("running", "cancelled"),
        ("cancelling", "cancelled"),
        ("unknown", "cancelled"),
    },
    "system": {
        ("running", "queued"),
        ("running", "unknown"),
        ("running", "failed"),
        ("cancelling", "cancelled"),
    },
}
"""Every edge each actor may take, from the state machine's diagram."""

CANCEL = {"queued": "cancelled", "running": "cancelling"}
FORCE = {s: "cancelled" for s in ("queued", "running", "cancelling", "unknown")}
FINISH: dict[str, dict[str, str]] = {
    "succeeded": {"running": "succeeded", "cancelling": "succeeded"},
    "failed": {"running": "failed", "cancelling": "cancelled"},
    "retry": {"running": "queued", "cancelling": "cancelled"},
    "released": {"running": "queued", "cancelling": "cancelled"},
    "cancelled": {"cancelling": "cancelled"},
    "unknown": {"running": "unknown"},
}
"""How each request moves a job from each state; a state it does not name, it leaves alone."""
REAP: dict[str, set[str]] = {
    "running": {"queued", "unknown", "failed"},
    "cancelling": {"cancelled"},
}


@dataclass(frozen=True)
class Claim:
    worker: str


@dataclass(frozen=True)
class Cancel:
    job: int  # an index into the example's jobs
    force: bool


@dataclass(frozen=True)
class End:
    attempt: int  # an index into the attempts claimed so far
    outcome: str


@dataclass(frozen=True)
class Reap:
    pass


@dataclass(frozen=True)
class Ending:
    """An :class:`End` bound to the attempt it names when its round starts."""

    job_id: int
    attempt_id: int
    outcome: str


Op = Claim | Cancel | End | Reap

ops = st.one_of(
    st.builds(Claim, st.sampled_from(["w1", "w2"])),
    st.builds(Cancel, st.integers(0, 9), st.booleans()),
    st.builds(End, st.integers(0, 19), st.sampled_from(sorted(FINISH))),
    st.just(Reap()),
)
rounds = st.lists(
    st.tuples(st.lists(st.integers(0, 9), max_size=2), st.lists(ops, min_size=2, max_size=5)),
    min_size=1,
    max_size=6,
)
"""Rounds of (jobs whose lease runs out first, requests made at once)."""


class Example:
    """One example's jobs, the attempts claimed so far, and the checks of each round."""

    def __init__(self, store: JobStore, pool: asyncpg.Pool) -> None:
        self.store = store
        self.pool = pool
        self.jobs: list[tuple[int, str]] = []
        self.attempts: list[tuple[int, int]] = []  # (job id, attempt id), claim order
        self.expired: set[int] = set()  # attempts whose lease this example ran out
        self.serial = itertools.count()

    async def submit(self, kinds: list[str]) -> None:
        for kind in kinds:
            params = {"prompt": "x"} if kind == "agent" else {}
            job, _ = await self.store.submit(kind, params, requester="r", origin={"t": 1})
            self.jobs.append((job.id, job.public_id))

    async def expire(self, indices: list[int]) -> None:
        for i in indices:
            job_id = self.jobs[i % len(self.jobs)][0]
            ids = await self.pool.fetch(
                "UPDATE attempt SET lease_expires_at = now() - interval '1 s' "
                "WHERE job_id = $1 AND ended_at IS NULL RETURNING id",
                job_id,
            )
            self.expired |= {r["id"] for r in ids}

    def resolve(self, made: list[Op]) -> list[Op | Ending]:
        """The round's requests, each end bound to the attempt it names now (one end per
        attempt and round, so that each end's event is its own; a second becomes a reap)."""
        out: list[Op | Ending] = []
        for op in made:
            if isinstance(op, End) and self.attempts:
                job_id, attempt_id = self.attempts[op.attempt % len(self.attempts)]
                taken = any(isinstance(o, Ending) and o.attempt_id == attempt_id for o in out)
                out.append(Reap() if taken else Ending(job_id, attempt_id, op.outcome))
            elif isinstance(op, End):
                out.append(Reap())
            else:
                out.append(op)
        return out

    def start(self, op: Op | Ending, mark: str) -> Awaitable[Any]:
        """Make the request ``op`` stands for, with ``mark`` as its reason (to find its events)."""
        if isinstance(op, Claim):
            return self.store.claim(op.worker, limit=2, lease_seconds=30)
        if isinstance(op, Cancel):
            actor = Actor.OPERATOR if op.force else Actor.REQUESTER
            public_id = self.jobs[op.job % len(self.jobs)][1]
            return _or_refused(
                self.store.cancel(public_id, actor=actor, by="r", reason=mark, force=op.force)
            )
        if isinstance(op, Ending):
            outcome = AttemptOutcome(op.outcome)
            end = Finish(op.job_id, op.attempt_id, outcome, result={"m": mark}, error={})
            return self.store.finish([end])
        return self.store.reap(cancel_grace_seconds=600, retry_base=0)

    async def run_round(self, made: list[Op]) -> None:
        """Make the requests at once, then check each answer against what the events say."""
        before = await self.pool.fetchval("SELECT coalesce(max(id), 0) FROM event")
        requests = [(op, f"op{next(self.serial)}") for op in self.resolve(made)]
        answers = await asyncio.gather(*(self.start(op, mark) for op, mark in requests))
        events = await self.pool.fetch(
            "SELECT job_id, from_state::text, to_state::text, actor::text, attempt_id, reason, "
            "data, ignored FROM event WHERE id > $1 ORDER BY id",
            before,
        )
        system = [e for e in events if e["actor"] == "system" and not e["ignored"]]
        reaped = 0
        for (op, mark), answer in zip(requests, answers, strict=True):
            if isinstance(op, Claim):
                self.check_claim(answer, events)
            elif isinstance(op, Cancel):
                self.check_cancel(op, mark, answer, events)
            elif isinstance(op, Ending):
                self.check_finish(op, answer, events)
            else:
                reaped += sum(answer.values())
        assert reaped == len(system)  # every move the reapers counted, and no other
        for e in system:
            assert e["to_state"] in REAP[e["from_state"]]
            assert e["attempt_id"] in self.expired  # only a lease that ran out is reaped

    def check_claim(self, claims: list[Any], events: list[asyncpg.Record]) -> None:
        for c in claims:
            assert c.job_id in {j for j, _ in self.jobs}
            [started] = [
                e
                for e in events
                if e["attempt_id"] == c.attempt_id
                and (e["actor"], e["to_state"]) == ("worker", "running")
            ]
            assert (started["job_id"], started["from_state"]) == (c.job_id, "queued")
            assert not started["ignored"]
            self.attempts.append((c.job_id, c.attempt_id))

    def check_cancel(
        self, op: Cancel, mark: str, answer: CancelOutcome | str, events: list[asyncpg.Record]
    ) -> None:
        job_id = self.jobs[op.job % len(self.jobs)][0]
        reason = f"{mark} (forced)" if op.force else mark
        actor = "operator" if op.force else "requester"
        # An attempt ending while cancelling keeps the cancel's reason: the actor tells them apart.
        mine = [
            e for e in events if (e["job_id"], e["reason"], e["actor"]) == (job_id, reason, actor)
        ]
        table = FORCE if op.force else CANCEL
        if answer == "refused":  # IllegalTransition: only a plain cancel of an unknown job
            assert not op.force
            assert mine == []
            return
        assert isinstance(answer, CancelOutcome)
        if answer.changed:
            [e] = mine
            assert table.get(e["from_state"]) == e["to_state"] == answer.outcome.value
        else:
            assert mine == []
            seen = answer.job.state.value  # as the cancel found it, in its own transaction
            assert seen not in table
            if answer.outcome is CancelResult.TOO_LATE:
                assert seen in TERMINAL
            else:
                assert (answer.outcome, seen) == (CancelResult.ALREADY_CANCELLING, "cancelling")

    def check_finish(self, op: Ending, answer: list[Moved], events: list[asyncpg.Record]) -> None:
        [moved] = answer
        job_id, attempt_id = op.job_id, op.attempt_id
        # Its attempt was claimed in an earlier round: its only worker event here is this end.
        [e] = [
            e
            for e in events
            if (e["job_id"], e["attempt_id"], e["actor"]) == (job_id, attempt_id, "worker")
        ]
        assert e["from_state"] == moved.source.value
        if moved.ok:
            assert not e["ignored"]
            assert FINISH[op.outcome].get(e["from_state"]) == e["to_state"] == moved.target
        else:
            # Refused: the table has no move from there, or the attempt no longer held the lease.
            assert e["ignored"]
            evidence = json.loads(e["data"]) if isinstance(e["data"], str) else e["data"]
            assert (
                e["from_state"] not in FINISH[op.outcome]
                or evidence.get("current_attempt_id") != attempt_id
            )

    async def check_records(self) -> None:
        """Each job's history follows the table, and its attempts agree with its state."""
        ids = [j for j, _ in self.jobs]
        jobs = await self.pool.fetch(
            "SELECT id, state::text, current_attempt_id FROM job WHERE id = ANY($1::bigint[])",
            ids,
        )
        for job in jobs:
            history = await self.pool.fetch(
                "SELECT from_state::text, to_state::text, actor::text FROM event "
                "WHERE job_id = $1 AND NOT ignored ORDER BY id",
                job["id"],
            )
            assert (history[0]["from_state"], history[0]["to_state"]) == (None, "queued")
            for prev, nxt in itertools.pairwise(history):
                assert prev["to_state"] == nxt["from_state"]
                assert (nxt["from_state"], nxt["to_state"]) in MAY[nxt["actor"]]
            assert history[-1]["to_state"] == job["state"]
            open_attempts = await self.pool.fetch(
                "SELECT id FROM attempt WHERE job_id = $1 AND ended_at IS NULL", job["id"]
            )
            if job["state"] in LIVE:
                assert [a["id"] for a in open_attempts] == [job["current_attempt_id"]]
            else:  # ended, queued or unknown: no attempt left open, none current
                assert open_attempts == []
                assert job["current_attempt_id"] is None


async def _or_refused(answer: Awaitable[CancelOutcome]) -> CancelOutcome | str:
    try:
        return await answer
    except IllegalTransition:
        return "refused"


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kinds=st.lists(st.sampled_from(["sleep", "agent"]), min_size=2, max_size=4),
    plan=rounds,
)
async def test_concurrent_requests_follow_the_table_and_leave_no_attempt_open(
    store: JobStore, pool: asyncpg.Pool, kinds: list[str], plan: list[tuple[list[int], list[Op]]]
) -> None:
    """Rounds of claims, cancels (plain and forced), finishes (any outcome, from current and
    stale attempts) and reaper rounds, made at once: each answer matches the move its events
    record and the table allows; every job's history is a chain of allowed moves; a job not
    running has no attempt open, a running one exactly its current attempt."""
    # The database is the test's, shared by the examples: each starts on empty tables.
    await pool.execute("DELETE FROM attempt; DELETE FROM event; DELETE FROM job")
    example = Example(store, pool)
    await example.submit(kinds)
    for expire, made in plan:
        await example.expire(expire)
        await example.run_round(made)
        await example.check_records()
