"""Random sequences of everything that can happen to jobs, with the invariants checked after
every step (hypothesis stateful testing against real PostgreSQL)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from jobs.engine.db import create_pool
from jobs.engine.moves import Finish
from jobs.engine.state import TERMINAL, TRANSITIONS, Actor, State
from jobs.engine.store import JobStore
from jobs.errors import IllegalTransition, NotAllowed, StaleTransition
from jobs.kinds import default_registry
from tests.support.databases import create_database, drop_database

OUTCOMES = ["succeeded", "failed", "retry", "cancelled", "released", "unknown"]


@pytest.fixture
def stateful_dsn(server_dsn: str, template_db: str) -> Iterator[str]:
    name = f"errand_stateful_{secrets.token_hex(4)}"
    yield asyncio.run(create_database(server_dsn, name, template_db))
    asyncio.run(drop_database(server_dsn, name))


def make_machine(dsn: str) -> type[RuleBasedStateMachine]:
    class JobMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.loop = asyncio.new_event_loop()
            self.pool: asyncpg.Pool = self.run(create_pool(dsn, min_size=1, max_size=3))
            self.store = JobStore(self.pool, default_registry())
            self.jobs: list[tuple[int, str]] = []
            self.attempts: list[tuple[int, int, str]] = []  # (job_id, attempt_id, worker)
            self.terminal: dict[int, str] = {}

        def run(self, coro: Any) -> Any:
            return self.loop.run_until_complete(coro)

        def teardown(self) -> None:
            ids = [j for j, _ in self.jobs]
            if ids:  # leave the shared database clean for the next example
                # Attempts, events and notices carry no foreign key (migration 0008).
                for table, column in (
                    ("attempt", "job_id"),
                    ("event", "job_id"),
                    ("outbox", "job_id"),
                    ("job", "id"),
                ):
                    self.run(
                        self.pool.execute(f"DELETE FROM {table} WHERE {column} = ANY($1)", ids)
                    )
            self.run(self.pool.close())
            self.loop.close()

        @rule()
        def submit(self) -> None:
            job, _ = self.run(self.store.submit("sleep", {}, requester="r", origin={"t": 1}))
            self.jobs.append((job.id, job.public_id))

        @rule(worker=st.sampled_from(["w1", "w2"]), n=st.integers(1, 2))
        def claim(self, worker: str, n: int) -> None:
            for c in self.run(self.store.claim(worker, limit=n, lease_seconds=30)):
                self.attempts.append((c.job_id, c.attempt_id, worker))

        @rule(data=st.data(), outcome=st.sampled_from(OUTCOMES))
        def finish(self, data: st.DataObject, outcome: str) -> None:
            if not self.attempts:
                return
            job_id, attempt_id, _ = data.draw(st.sampled_from(self.attempts))
            current = self.run(
                self.pool.fetchval("SELECT current_attempt_id FROM job WHERE id = $1", job_id)
            )
            try:
                self.run(
                    self.store.finish_one(
                        Finish(
                            job_id,
                            attempt_id,
                            outcome,
                            result={"a": attempt_id},
                            error={"type": "E", "message": "x"},
                        )
                    )
                )
                landed = True
            except StaleTransition:
                landed = False
            if landed:  # no write from a non-current attempt lands
                assert current == attempt_id

        @rule(data=st.data(), outcome=st.sampled_from(OUTCOMES))
        def stale_write(self, data: st.DataObject, outcome: str) -> None:
            """An attempt that no longer holds the lease reports: nothing may land."""
            ended = self.run(
                self.pool.fetch(
                    "SELECT job_id, id FROM attempt WHERE ended_at IS NOT NULL ORDER BY id"
                )
            )
            if not ended:
                return
            row = data.draw(st.sampled_from(ended))
            with pytest.raises(StaleTransition):
                self.run(
                    self.store.finish_one(
                        Finish(row["job_id"], row["id"], outcome, result={"stale": True})
                    )
                )
            assert not self.run(self.store.set_progress(row["job_id"], row["id"], {"s": 1}))

        @rule(data=st.data())
        def progress(self, data: st.DataObject) -> None:
            if not self.attempts:
                return
            job_id, attempt_id, _ = data.draw(st.sampled_from(self.attempts))
            current = self.run(
                self.pool.fetchval("SELECT current_attempt_id FROM job WHERE id = $1", job_id)
            )
            landed = self.run(self.store.set_progress(job_id, attempt_id, {"done": 1}))
            assert landed == (current == attempt_id)

        @rule(worker=st.sampled_from(["w1", "w2"]))
        def heartbeat(self, worker: str) -> None:
            mine = [a for _, a, w in self.attempts if w == worker]
            verdicts = self.run(self.store.heartbeat(worker, 30, mine))
            for attempt_id, verdict in verdicts.items():
                current = self.run(
                    self.pool.fetchval(
                        "SELECT current_attempt_id FROM job WHERE current_attempt_id = $1",
                        attempt_id,
                    )
                )
                assert (verdict == "lost") == (current is None)

        @rule(data=st.data(), force=st.booleans())
        def cancel(self, data: st.DataObject, force: bool) -> None:
            if not self.jobs:
                return
            _, public_id = data.draw(st.sampled_from(self.jobs))
            actor = Actor.OPERATOR if force else Actor.REQUESTER
            try:
                self.run(self.store.cancel(public_id, actor=actor, by="r", force=force))
            except IllegalTransition:
                state = self.run(self.store.get(public_id)).state
                assert state is State.UNKNOWN
                assert not force

        @rule(data=st.data())
        def expire_lease(self, data: st.DataObject) -> None:
            if not self.jobs:
                return
            job_id, _ = data.draw(st.sampled_from(self.jobs))
            self.expire_lease_of(job_id)

        @rule(data=st.data())
        def grace_passes(self, data: st.DataObject) -> None:
            if not self.jobs:
                return
            job_id, _ = data.draw(st.sampled_from(self.jobs))
            self.run(
                self.pool.execute(
                    "UPDATE job SET cancel_requested_at = now() - interval '1 hour' "
                    "WHERE id = $1 AND state = 'cancelling'",
                    job_id,
                )
            )

        @rule(data=st.data())
        def takeover(self, data: st.DataObject) -> None:
            """A worker stalls: its lease expires, the reaper requeues, another worker claims."""
            if not self.jobs:
                return
            job_id, _ = data.draw(st.sampled_from(self.jobs))
            self.expire_lease_of(job_id)
            self.reap()
            self.claim("w2", 2)

        def expire_lease_of(self, job_id: int) -> None:
            self.run(
                self.pool.execute(
                    "UPDATE attempt SET lease_expires_at = now() - interval '1 s' "
                    "WHERE job_id = $1 AND ended_at IS NULL",
                    job_id,
                )
            )

        @rule()
        def reap(self) -> None:
            self.run(self.store.reap(cancel_grace_seconds=60, retry_base=0))

        @rule(
            data=st.data(), outcome=st.sampled_from(["succeeded", "failed", "retry", "cancelled"])
        )
        def resolve(self, data: st.DataObject, outcome: str) -> None:
            if not self.jobs:
                return
            _, public_id = data.draw(st.sampled_from(self.jobs))
            before = self.run(self.store.get(public_id)).state
            try:
                self.run(
                    self.store.resolve(
                        public_id, actor=Actor.OPERATOR, outcome=outcome, note="n", by="op"
                    )
                )
                assert before is State.UNKNOWN
            except (IllegalTransition, NotAllowed):
                assert before is not State.UNKNOWN

        @invariant()
        def at_most_one_live_attempt_and_it_is_current(self) -> None:
            rows = self.run(
                self.pool.fetch(
                    "SELECT j.id, j.state::text, j.current_attempt_id, "
                    "array_agg(a.id) FILTER (WHERE a.id IS NOT NULL AND a.ended_at IS NULL) "
                    "AS live "
                    "FROM job j LEFT JOIN attempt a ON a.job_id = j.id GROUP BY j.id"
                )
            )
            for r in rows:
                live = r["live"] or []
                assert len(live) <= 1
                if r["state"] in ("running", "cancelling"):
                    assert live == [r["current_attempt_id"]]
                else:
                    assert live == []
                    assert r["current_attempt_id"] is None

        @invariant()
        def terminal_states_never_change(self) -> None:
            for r in self.run(self.pool.fetch("SELECT id, state::text FROM job")):
                if r["id"] in self.terminal:
                    assert self.terminal[r["id"]] == r["state"]
                elif State(r["state"]) in TERMINAL:
                    self.terminal[r["id"]] = r["state"]

        @invariant()
        def every_change_has_exactly_one_legal_event(self) -> None:
            states = dict(self.run(self.pool.fetch("SELECT id, state::text FROM job")))
            evs = self.run(
                self.pool.fetch(
                    "SELECT job_id, from_state::text, to_state::text, actor::text FROM event "
                    "WHERE NOT ignored ORDER BY id"
                )
            )
            last: dict[int, str | None] = {}
            for e in evs:
                assert last.get(e["job_id"]) == e["from_state"]
                if e["from_state"] is not None:
                    assert (
                        State(e["to_state"])
                        in TRANSITIONS[(State(e["from_state"]), Actor(e["actor"]))]
                    )
                assert not (e["from_state"] == "cancelled" and e["to_state"] == "succeeded")
                last[e["job_id"]] = e["to_state"]
            assert last == states

    return JobMachine


def test_random_job_histories_keep_the_invariants(stateful_dsn: str) -> None:
    """At most one live attempt; terminal never changes; one legal event per change;
    cancelled never becomes succeeded; no write from a non-current attempt lands."""
    run_state_machine_as_test(
        make_machine(stateful_dsn),
        settings=settings(
            max_examples=40,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
