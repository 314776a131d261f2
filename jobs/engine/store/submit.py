"""The job store: every read and write of the job record, on PostgreSQL.

State changes go through :func:`jobs.engine.transition.transition`; this module decides which
moves a request means (the race policy lives in the ``Move`` lists below) and turns rows that did
not move into typed errors or answers. The runtime's records of an attempt (steps, usage,
effects, assets) are in :mod:`jobs.engine.records`, the operator's reads and deletes in
:mod:`jobs.engine.admin`: no SQL on the job tables lives outside :mod:`jobs.engine`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, Protocol

import asyncpg

import jobs.limits as limits
from jobs.engine import observe
from jobs.engine.db import Conn
from jobs.engine.ids import new_public_id, new_public_ids, normalize
from jobs.engine.queries import q, q_with_sets
from jobs.engine.state import ACTIVE, LIVE, TERMINAL, Actor, State, allowed
from jobs.engine.transition import KEEP_REASON, request_cancel, transition
from jobs.engine.transition import claim as claim_jobs
from jobs.engine.views import (
    AttemptOutcome,
    AttemptView,
    CancelOutcome,
    CancelResult,
    Claim,
    EventView,
    JobStatus,
    JobView,
    Move,
    Moved,
    ResolveAs,
    Row,
    Verdict,
    jsonable,
)
from jobs.errors import (
    ErrandError,
    IdempotencyConflict,
    IllegalTransition,
    InvalidParams,
    NotAllowed,
    QuotaExceeded,
    StaleTransition,
    UnknownJob,
)
from jobs.retry import backoff
from jobs.secrets import scrub

S = State
Out = AttemptOutcome  # short: the race policy below reads as a table

# What counts against a quota: every job not yet terminal (unknown ones too, until resolved).
_ACTIVE = sorted(s.value for s in ACTIVE)
_LIVE = sorted(s.value for s in LIVE)

COMPLETED_DESPITE_CANCEL = "completed despite cancel request"

# The race policy, as moves (see docs/state-machine.md).
SUCCEED = [
    Move(S.RUNNING, S.SUCCEEDED, outcome=Out.SUCCEEDED),
    Move(S.CANCELLING, S.SUCCEEDED, COMPLETED_DESPITE_CANCEL, outcome=Out.SUCCEEDED),
]
# A handler failure (failed, or a retry) uses up one of max_attempts; nothing else from a worker
# does (see docs/state-machine.md, "Attempts and failures").
FAIL = [
    Move(S.RUNNING, S.FAILED, outcome=Out.FAILED, charge=True),
    Move(S.CANCELLING, S.CANCELLED, KEEP_REASON, outcome=Out.CANCELLED),  # no retry once cancelling
]
RETRY = [
    Move(S.RUNNING, S.QUEUED, outcome=Out.RETRY, charge=True),
    Move(S.CANCELLING, S.CANCELLED, KEEP_REASON, outcome=Out.CANCELLED),
]
RELEASE = [
    Move(S.RUNNING, S.QUEUED, "released by worker shutdown", outcome=Out.RELEASED),
    Move(S.CANCELLING, S.CANCELLED, KEEP_REASON, outcome=Out.CANCELLED),
]
# Stopped by a worker shutdown, but not safe to run again from the start: nobody knows how far
# it got (the attempt itself counts as released).
STOP_MID_RUN = [
    Move(S.RUNNING, S.UNKNOWN, outcome=Out.RELEASED),
    Move(S.CANCELLING, S.CANCELLED, KEEP_REASON, outcome=Out.CANCELLED),
]
ACK_CANCEL = [Move(S.CANCELLING, S.CANCELLED, KEEP_REASON, outcome=Out.CANCELLED)]
MARK_UNKNOWN = [Move(S.RUNNING, S.UNKNOWN, outcome=Out.UNKNOWN)]


class _ValidParams:
    """The params of a bulk submit: each kind checks, validates and writes as JSON each distinct
    params object, and empty params, once (10,000 rows of one kind: 12 ms of pydantic down to
    nothing; the rows keep the objects alive, so their ids hold)."""

    def __init__(self) -> None:
        self._done: dict[tuple[str, int | None], tuple[dict[str, Any], str]] = {}

    def clean(
        self, kind: str, spec: KindSpec, params: dict[str, Any]
    ) -> tuple[dict[str, Any], str]:
        """``params`` validated by ``spec`` (the kind named ``kind``), and as JSON text."""
        key = (kind, id(params) if params else None)
        done = self._done.get(key)
        if done is None:
            if params:
                limits.json_value("params", params)
            clean = spec.validate(params)
            done = self._done[key] = (clean, json.dumps(clean) if clean else "{}")
        return done


class _JsonTexts:
    """The origins of a bulk submit, each distinct object checked and encoded once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._texts: dict[int, str] = {}

    def check(self, value: dict[str, Any] | None) -> None:
        if value and id(value) not in self._texts:
            limits.json_value(self.name, value)
            self._texts[id(value)] = json.dumps(value)

    def text(self, value: dict[str, Any] | None) -> str:
        return self._texts[id(value)] if value else "{}"


@dataclass(frozen=True)
class Submission:
    """One job to create with :meth:`JobStore.submit_many` (the arguments of ``submit``)."""

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    requester: str = "api"
    origin: dict[str, Any] | None = None
    origin_group: str | None = None
    idempotency_key: str | None = None


@asynccontextmanager
async def _no_savepoint() -> AsyncIterator[None]:
    yield


@cache
def _reaper_due_sql() -> str:
    """``reaper_due`` with the live states and the deadline's source states (from
    jobs/engine/state.py and ``_DEADLINE_MOVES``) written in as constants."""
    return q_with_sets("reaper_due", live=_LIVE, deadline=(m.source.value for m in _DEADLINE_MOVES))


@cache
def _insert_many_without_keys() -> str:
    """``job_insert_many`` for a batch without idempotency keys: no key order to keep, no
    ON CONFLICT (its speculative insertion costs each row an extra WAL record), and, since every
    row is created, only the count comes back instead of every public id."""
    sql = q("job_insert_many")
    for keyed, plain in (
        (
            "    ORDER BY idempotency_key\n"
            "    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING\n",
            "",
        ),
        ("SELECT ins.public_id,", "SELECT count(*) AS created,"),
    ):
        assert keyed in sql, "job_insert_many changed: update _insert_many_without_keys"
        sql = sql.replace(keyed, plain)
    return sql


def _bulk_arguments(public_ids: list[str], columns: list[list[Any]]) -> list[Any]:
    """The arguments of ``job_insert_many``: the public ids, then each other column as an array,
    then each column's one value. A column whose rows all hold the same value is sent as that
    value alone (and a NULL array); any other column as its array (and a NULL value). Encoding
    an array costs asyncpg a type check per element, and the server parses JSON text per row:
    for a batch of one kind, one requester and one origin this sends one array instead of nine.
    """
    arrays: list[list[Any] | None] = []
    values: list[Any] = []
    for column in columns:
        first = column[0] if column else None
        if column.count(first) == len(column):  # all the same, compared in C
            arrays.append(None)
            values.append(first)
        else:
            arrays.append(column)
            values.append(None)
    return [public_ids, *arrays, *values]


@dataclass(frozen=True)
class Quotas:
    """Limits on queued and live jobs; ``None`` means unlimited."""

    per_requester: int | None = None
    per_group: int | None = None


@dataclass(frozen=True)
class Finish:
    """How an attempt ended, as reported by the worker runtime."""

    job_id: int
    attempt_id: int
    # One of the keys of _FINISH_MOVES: succeeded, failed, retry, cancelled, released, unknown.
    outcome: AttemptOutcome
    result: Any = None
    error: Any = None
    reason: str | None = None
    run_at: datetime | None = None
    # A released attempt whose job may not run again from the start (not retry-safe, or no
    # attempt left): the job ends unknown instead of being queued (STOP_MID_RUN).
    mid_run: bool = False


_FINISH_MOVES: Mapping[AttemptOutcome, tuple[list[Move], State]] = {
    Out.SUCCEEDED: (SUCCEED, S.SUCCEEDED),
    Out.FAILED: (FAIL, S.FAILED),
    Out.RETRY: (RETRY, S.QUEUED),
    Out.CANCELLED: (ACK_CANCEL, S.CANCELLED),
    Out.RELEASED: (RELEASE, S.QUEUED),
    Out.UNKNOWN: (MARK_UNKNOWN, S.UNKNOWN),
}

_RESOLVE_TARGETS: Mapping[ResolveAs, State] = {
    ResolveAs.SUCCEEDED: S.SUCCEEDED,
    ResolveAs.FAILED: S.FAILED,
    ResolveAs.RETRY: S.QUEUED,
    ResolveAs.CANCELLED: S.CANCELLED,
}

# What a deadline does: a waiting job is cancelled at once, a running one is told to stop.
_DEADLINE_MOVES = [
    Move(S.QUEUED, S.CANCELLED, "timed_out"),
    Move(S.RUNNING, S.CANCELLING, "timed_out"),
]


class KindSpec(Protocol):
    """What the store needs of a kind (:class:`jobs.runtime.registry.Kind` is one)."""

    @property
    def max_attempts(self) -> int: ...
    @property
    def deadline_seconds(self) -> float | None: ...
    @property
    def requester_may_resolve(self) -> bool: ...
    @property
    def retry_safe(self) -> bool: ...
    @property
    def count_crashes(self) -> bool: ...
    def validate(self, raw: dict[str, Any]) -> dict[str, Any]: ...


class Kinds(Protocol):
    """The kinds a store accepts, by name (:class:`jobs.runtime.registry.Registry` is one).

    A protocol, so the engine does not import the handler runtime that sits above it.
    """

    def get(self, name: str) -> KindSpec: ...
    def find(self, name: str) -> KindSpec | None: ...


def redact_error(exc: BaseException, limit: int = 2000) -> dict[str, str]:
    """An error as stored: type and message, cut short; never locals or arguments."""
    # PostgreSQL text and jsonb cannot hold NUL; a message carrying one (a command's output)
    # would make the attempt's end unwritable.
    message = scrub(str(exc)).replace("\x00", "\ufffd")
    return {"type": type(exc).__name__, "message": message[:limit]}


def _same_request(existing: asyncpg.Record, kind: str, params: dict[str, Any]) -> JobView:
    """The job an idempotency key already made, when this submit asks for the same thing.

    Kept apart from the insert on purpose: whatever statement finds the existing job (a
    lookup, or an ``ON CONFLICT`` that inserted nothing), this comparison decides. ``params``
    are the validated ones, compared as JSON with what the job stored.

    Raises:
        IdempotencyConflict: another kind or other params under the same key.
    """
    job = JobView.from_record(existing)
    if job.kind != kind or existing["params"] != params:
        raise IdempotencyConflict(str(existing["idempotency_key"]), job.public_id)
    return job


class JobStore:
    """Reads and writes of the job record through one pool."""

    def __init__(
        self, pool: asyncpg.Pool, registry: Kinds, *, quotas: Quotas | None = None
    ) -> None:
        self.pool = pool
        self.registry = registry
        self.quotas = quotas or Quotas()

    # -- submit and read ------------------------------------------------------------------

    async def submit(
        self,
        kind: str,
        params: dict[str, Any],
        *,
        requester: str,
        origin: dict[str, Any] | None = None,
        origin_group: str | None = None,
        idempotency_key: str | None = None,
    ) -> tuple[JobView, bool]:
        """Create a job, or return the one this idempotency key already made.

        Returns:
            The job and whether this call created it.

        Raises:
            UnknownKind, InvalidParams: nothing was created.
            QuotaExceeded: the requester or group is at its limit; nothing was created.
            IdempotencyConflict: the key already made a job of another kind or with other
                params; nothing was created.
        """
        limits.text("kind", kind)
        limits.text("requester", requester)
        if idempotency_key is not None:
            limits.text("idempotency key", idempotency_key)
        if origin_group is not None:
            limits.text("origin group", origin_group)
        if params:  # an empty dict, the common case, needs no walk
            limits.json_value("params", params)
        if origin:
            limits.json_value("origin", origin)
        spec = self.registry.get(kind)
        clean = spec.validate(params)
        args = (kind, clean, requester, origin or {}, origin_group, idempotency_key)
        if self.quotas.per_requester is None and (
            self.quotas.per_group is None or origin_group is None
        ):
            # The fast path: one statement (job, event and notice, NOTIFY) is its own
            # transaction; no BEGIN/COMMIT, no read before the write.
            async with self.pool.acquire() as conn:
                return await self._insert(conn, spec, args)
        async with self.pool.acquire() as conn, conn.transaction():
            if idempotency_key is not None:
                existing = await conn.fetchrow(q("job_by_idempotency_key"), idempotency_key)
                if existing is not None:
                    return _same_request(existing, kind, clean), False
            await self._check_quotas(conn, requester, origin_group)
            return await self._insert(conn, spec, args)

    async def _insert(
        self, conn: Conn, spec: KindSpec, args: tuple[Any, ...]
    ) -> tuple[JobView, bool]:
        """Insert one job (``job_insert``), retrying a public-id collision."""
        kind, clean, requester, origin, origin_group, idempotency_key = args
        for _ in range(5):
            try:
                # Inside a transaction (quotas) a savepoint keeps it usable after a collision.
                savepoint = conn.transaction() if conn.is_in_transaction() else _no_savepoint()
                async with savepoint:
                    record = await conn.fetchrow(
                        q("job_insert"),
                        new_public_id(),
                        kind,
                        clean,
                        requester,
                        origin,
                        origin_group,
                        idempotency_key,
                        spec.max_attempts,
                        spec.deadline_seconds,
                    )
            except asyncpg.UniqueViolationError as exc:
                if "public_id" in str(exc.constraint_name or ""):
                    continue
                raise
            if record is None:  # the idempotency key exists (maybe from a concurrent submit)
                record = await conn.fetchrow(q("job_by_idempotency_key"), idempotency_key)
                assert record is not None
                return _same_request(record, kind, clean), False
            return JobView.from_record(record), True
        raise RuntimeError("could not allocate a public id")  # pragma: no cover

    async def submit_many(self, submissions: Sequence[Submission]) -> list[tuple[str, bool]]:
        """Create many jobs in one statement; each row honours its own idempotency key.

        Every job gets what :meth:`submit` gives it (its creation event, a notice when it has an
        origin, a NOTIFY for workers). All rows are validated first: one bad row raises
        and nothing is created. A row whose key exists (or repeats an earlier row's key in
        this batch) refers to the job that key made.

        Returns:
            For each submission in order: its job's public id and whether this call created it
            (read the jobs with :meth:`get` or :meth:`list_jobs`).

        Raises:
            UnknownKind, InvalidParams: naming the row (0-based); nothing was created.
            QuotaExceeded: with quotas configured rows are submitted one by one, and the
                rows before the one over the limit stay created.
            IdempotencyConflict: a key already made a job of another kind or with other params;
                nothing was created (unless a concurrent submit took the key meanwhile: then
                the other rows of this batch stay created).
        """
        specs: list[KindSpec] = []
        cleaned: list[dict[str, Any]] = []
        # A batch usually shares one origin object across its rows: each distinct object is
        # checked and written as JSON once (the rows keep them alive, so their ids hold).
        origins = _JsonTexts("origin")
        valid = _ValidParams()
        texts: list[str] = []
        for n, sub in enumerate(submissions):
            try:
                # The same limits as submit, per row.
                limits.text("kind", sub.kind)
                limits.text("requester", sub.requester)
                if sub.idempotency_key is not None:
                    limits.text("idempotency key", sub.idempotency_key)
                if sub.origin_group is not None:
                    limits.text("origin group", sub.origin_group)
                origins.check(sub.origin)
                spec = self.registry.get(sub.kind)
                clean, text = valid.clean(sub.kind, spec, sub.params)
                cleaned.append(clean)
                texts.append(text)
            except ErrandError as exc:
                exc.args = (f"row {n}: {exc}",)  # same type, the row named in the message
                raise
            specs.append(spec)
        if self.quotas.per_requester is not None or self.quotas.per_group is not None:
            out: list[tuple[str, bool]] = []
            for s, c in zip(submissions, cleaned, strict=True):
                job, created = await self.submit(
                    s.kind,
                    c,
                    requester=s.requester,
                    origin=s.origin,
                    origin_group=s.origin_group,
                    idempotency_key=s.idempotency_key,
                )
                out.append((job.public_id, created))
            return out
        # A key repeated inside the batch is inserted once; the later rows refer to it, and must
        # ask for the same thing.
        first_of: dict[str, int] = {}
        rows: list[int] = []
        for n, sub in enumerate(submissions):
            key = sub.idempotency_key
            if key is not None:
                if key in first_of:
                    first = first_of[key]
                    if (sub.kind, cleaned[n]) != (submissions[first].kind, cleaned[first]):
                        raise InvalidParams(
                            f"row {n}: idempotency key {key!r} is used by row {first} for a "
                            "different request"
                        )
                    continue
                first_of[key] = n
            rows.append(n)
        if first_of:
            # A key that already made a job must ask for the same thing, checked before
            # anything is written (as submit does).
            known = await self.pool.fetch(q("job_by_idempotency_keys"), list(first_of))
            for r in known:
                n = first_of[r["idempotency_key"]]
                _same_request(r, submissions[n].kind, cleaned[n])
        params = [texts[n] for n in rows]
        origin_texts = [origins.text(submissions[n].origin) for n in rows]
        records: list[asyncpg.Record] = []
        for _ in range(5):
            ids = new_public_ids(len(rows))
            args = _bulk_arguments(
                ids,
                [
                    [submissions[n].kind for n in rows],
                    params,
                    [submissions[n].requester for n in rows],
                    origin_texts,
                    [submissions[n].origin_group for n in rows],
                    [submissions[n].idempotency_key for n in rows],
                    [specs[n].max_attempts for n in rows],
                    [specs[n].deadline_seconds for n in rows],
                ],
            )
            try:
                if first_of:
                    records = await self.pool.fetch(q("job_insert_many"), *args)
                else:  # no keys: every row is created, only the count comes back
                    await self.pool.fetchval(_insert_many_without_keys(), *args)
            except asyncpg.UniqueViolationError as exc:
                if "public_id" in str(exc.constraint_name or ""):
                    continue  # nothing was written: the statement is its own transaction
                raise
            break
        else:  # pragma: no cover
            raise RuntimeError("could not allocate public ids")
        if not first_of:
            return [(public_id, True) for public_id in ids]
        made = {r["public_id"] for r in records}
        answer: dict[int, tuple[str, bool]] = {
            n: (public_id, True)
            for n, public_id in zip(rows, ids, strict=True)
            if public_id in made
        }
        # Rows skipped for an existing key, and rows repeating a key of this batch.
        needed = [
            s.idempotency_key
            for n, s in enumerate(submissions)
            if n not in answer and s.idempotency_key is not None
        ]
        existing: dict[str, str] = {}
        if needed:
            for r in await self.pool.fetch(q("job_by_idempotency_keys"), needed):
                # A concurrent submit may have taken a key since the check above: the same
                # comparison (the rows of this batch that were new stay created).
                n = first_of[r["idempotency_key"]]
                existing[r["idempotency_key"]] = _same_request(
                    r, submissions[n].kind, cleaned[n]
                ).public_id
        return [
            answer[n] if n in answer else (existing[str(sub.idempotency_key)], False)
            for n, sub in enumerate(submissions)
        ]

    async def _check_quotas(self, conn: Conn, requester: str, group: str | None) -> None:
        # A per-requester/group advisory lock makes count-then-insert safe against a burst of
        # concurrent submits from one person.
        if self.quotas.per_requester is not None:
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 1))", requester)
            count = await conn.fetchval(q("job_count_active_by_requester"), requester, _ACTIVE)
            if count >= self.quotas.per_requester:
                raise QuotaExceeded(
                    f"quota reached: {count} of {self.quotas.per_requester} active jobs for you; "
                    "wait for one to finish or cancel one"
                )
        if self.quotas.per_group is not None and group is not None:
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 2))", group)
            count = await conn.fetchval(q("job_count_active_by_group"), group, _ACTIVE)
            if count >= self.quotas.per_group:
                raise QuotaExceeded(
                    f"quota reached: {count} of {self.quotas.per_group} active jobs here; "
                    "wait for one to finish"
                )

    async def get(self, public_id: str) -> JobView:
        """One job. Raises UnknownJob."""
        record = await self.pool.fetchrow(q("job_get"), normalize(public_id))
        if record is None:
            raise UnknownJob(public_id)
        return JobView.from_record(record)

    async def status(self, public_id: str) -> JobStatus:
        """A job with its attempts and events. Raises UnknownJob."""
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read"):
            record = await conn.fetchrow(q("job_get"), normalize(public_id))
            if record is None:
                raise UnknownJob(public_id)
            attempts = await conn.fetch(q("attempt_list_by_job"), record["id"])
            events = await conn.fetch(q("event_list_by_job"), record["id"])
            steps = await conn.fetch(q("step_list_by_job"), record["id"])
            assets = await conn.fetch(q("asset_list_by_job"), record["id"])
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
        records = await self.pool.fetch(
            q("job_list"),
            [s.value for s in states] if states else None,
            kind,
            requester,
            newer_than_seconds,
            origin_group,
            limit,
        )
        return [JobView.from_record(r) for r in records]

    # -- requests from people -------------------------------------------------------------

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

        ``queued`` becomes ``cancelled`` at once; ``running`` becomes ``cancelling`` and the
        attempt is told; with ``force`` (operators) anything not terminal becomes ``cancelled``.
        """
        if force and actor is not Actor.OPERATOR:
            raise NotAllowed("only an operator can force a cancel")
        text = f"cancelled by {actor.value}" + (f": {reason}" if reason else "")
        if force:
            moves = [
                Move(S.QUEUED, S.CANCELLED, text),
                Move(S.RUNNING, S.CANCELLED, f"{text} (forced)", outcome=Out.REVOKED),
                Move(S.CANCELLING, S.CANCELLED, f"{text} (forced)", outcome=Out.REVOKED),
                Move(S.UNKNOWN, S.CANCELLED, text),
            ]
        else:
            moves = [Move(S.QUEUED, S.CANCELLED, text), Move(S.RUNNING, S.CANCELLING, text)]
        async with self.pool.acquire() as conn:
            moved = await request_cancel(
                conn,
                normalize(public_id),
                actor=actor,
                moves=moves,
                cancel_by=by,
                cancel_reason=reason or f"requested by {actor.value}",
            )
        if moved is None:
            raise UnknownJob(public_id)
        view = JobView.from_record(moved.record)
        if moved.ok:
            done = (
                CancelResult.CANCELLED if moved.target is S.CANCELLED else CancelResult.CANCELLING
            )
            return observe.cancel_answered(CancelOutcome(view, done, True))
        if moved.source is S.CANCELLING:
            answer = CancelOutcome(view, CancelResult.ALREADY_CANCELLING, False)
            return observe.cancel_answered(answer)
        if moved.source in TERMINAL:
            return observe.cancel_answered(CancelOutcome(view, CancelResult.TOO_LATE, False))
        raise IllegalTransition(view.public_id, moved.source.value, "cancelled", actor.value)

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
            target = _RESOLVE_TARGETS[ResolveAs(outcome)]
        except ValueError:
            raise ValueError("resolve as one of: succeeded, failed, retry, cancelled") from None
        job = await self.get(public_id)
        if actor is Actor.REQUESTER and not self.registry.get(job.kind).requester_may_resolve:
            raise NotAllowed(f"jobs of kind {job.kind} can only be resolved by an operator")
        if target not in allowed(S.UNKNOWN, actor):
            raise NotAllowed(f"a {actor.value} cannot resolve a job as {outcome}")
        text = f"resolved as {outcome} by {by}: {note}"
        async with self.pool.acquire() as conn, conn.transaction():
            [moved] = await transition(
                conn,
                actor=actor,
                moves=[Move(S.UNKNOWN, target, text)],
                rows=[Row(job.id, run_at=datetime.now(UTC) if target is S.QUEUED else None)],
                fence="none",
                nominal=target,
                data={"note": note, "by": by},
            )
            if moved.ok and target is S.QUEUED:
                # A person asked for one more run: the claim never starts an attempt beyond
                # max_attempts, so grant it.
                await conn.execute(q("job_grant_attempt"), job.id)
        if not moved.ok:
            raise IllegalTransition(job.public_id, moved.source.value, target.value, actor.value)
        return await self.get(job.public_id)

    # -- workers --------------------------------------------------------------------------

    async def claim(
        self,
        worker: str,
        *,
        limit: int,
        lease_seconds: float,
        kinds: Sequence[str] | None = None,
    ) -> list[Claim]:
        """Claim up to ``limit`` due jobs with ``FOR UPDATE SKIP LOCKED``; one attempt each.

        One statement, no BEGIN/COMMIT (:func:`jobs.engine.transition.claim`); its rows are all
        the runtime needs to dispatch.
        """
        async with self.pool.acquire() as conn:
            moved = await claim_jobs(
                conn, worker=worker, limit=limit, lease_seconds=lease_seconds, kinds=kinds
            )
        return [
            Claim(
                job_id=m.job_id,
                public_id=m.record["public_id"],
                kind=m.record["kind"],
                params=m.record["params"],
                attempt_id=m.record["current_attempt_id"],
                attempt=m.record["attempts"],
                max_attempts=m.record["max_attempts"],
                failures=m.record["failures"],
                resume_state=m.record["checkpoint"],
                deadline_at=m.record["deadline_at"],
            )
            for m in moved
        ]

    async def refresh_statistics(self) -> bool:
        """ANALYZE the job table when its statistics miss a large change; True when it ran.

        The claim's plan depends on them: with a backlog they do not know of (a burst of
        submits since autovacuum's last analyze, up to a minute by default), the planner sorts
        every queued job on each claim instead of reading the first ones off ``job_claimable``
        (14 ms instead of 3 ms per claim of 100 at 50,000 queued). One worker at a time.
        """
        async with self.pool.acquire() as conn:
            if not await conn.fetchval(q("job_statistics_stale")):
                return False
            async with conn.transaction():
                if not await conn.fetchval(q("job_analyze_lock")):
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
        rows = await self.pool.fetch(q("attempt_heartbeat"), worker, lease_seconds, attempt_ids)
        verdicts: dict[int, Verdict] = {}
        for r in rows:
            verdicts[r["attempt_id"]] = "cancelling" if r["state"] == S.CANCELLING else "lost"
        return verdicts

    async def set_progress(self, job_id: int, attempt_id: int, progress: dict[str, Any]) -> bool:
        """Record progress; False when the attempt no longer holds the lease."""
        row = await self.pool.fetchrow(q("job_set_progress"), job_id, attempt_id, progress)
        return row is not None

    async def finish(self, finishes: Sequence[Finish]) -> list[Moved]:
        """Record how attempts ended, grouped into one statement per kind of outcome.

        A finish from an attempt that no longer holds the lease changes nothing and is kept as
        an ignored event; the returned ``Moved`` says which rows moved.
        """
        out: list[Moved] = []
        by_outcome: dict[tuple[AttemptOutcome, bool], list[Finish]] = {}
        for f in finishes:
            by_outcome.setdefault((f.outcome, f.mid_run), []).append(f)

        async def write(
            conn: Conn, key: tuple[AttemptOutcome, bool], group: list[Finish]
        ) -> list[Moved]:
            outcome, mid_run = key
            moves, nominal = (STOP_MID_RUN, S.UNKNOWN) if mid_run else _FINISH_MOVES[outcome]
            return await transition(
                conn,
                actor=Actor.WORKER,
                moves=moves,
                rows=[
                    Row(f.job_id, f.attempt_id, f.reason, f.result, f.error, f.run_at)
                    for f in group
                ],
                fence="attempt",
                nominal=nominal,
            )

        if len(by_outcome) == 1:
            # The usual batch (all succeeded): one statement, which locks its rows in id order
            # itself; no BEGIN/COMMIT.
            [(key, group)] = by_outcome.items()
            async with self.pool.acquire() as conn:
                return await write(conn, key, group)
        async with self.pool.acquire() as conn, conn.transaction():
            # One statement per outcome would lock the jobs group by group, not in id order,
            # and could deadlock with another batch; lock them all in id order first.
            await conn.execute(q("job_lock_many"), sorted({f.job_id for f in finishes}))
            for key, group in by_outcome.items():
                out += await write(conn, key, group)
        return out

    async def finish_one(self, finish: Finish) -> Moved:
        """Record one attempt's end. Raises StaleTransition when it no longer holds the lease."""
        [moved] = await self.finish([finish])
        if not moved.ok:
            raise StaleTransition(
                str(finish.job_id), moved.source.value, finish.outcome, Actor.WORKER.value
            )
        return moved

    # -- the system: reaper, cancel grace and deadlines -------------------------------------

    def _expired_lease_policy(
        self, r: asyncpg.Record, now: datetime, retry_base: float, retry_cap: float
    ) -> tuple[list[Move], Row, str]:
        """How a running job whose lease expired moves (no cancel, no blind effect in flight).

        The database restarting after the attempt's last heartbeat means the lease was lost to
        an outage (``lease_lost``); otherwise the worker is taken as crashed (``abandoned``).
        Neither uses up an attempt unless the kind counts crashes. The job runs again when its
        kind is retry-safe or it saved a checkpoint to resume from; otherwise nobody can say
        how far it got, and it becomes ``unknown``.
        """
        spec = self.registry.find(r["kind"])
        # A kind this process does not know: only retry-safe kinds have more than one attempt.
        retry_safe = spec.retry_safe if spec is not None else r["max_attempts"] > 1
        outage = bool(r["database_restarted"])
        charge = spec is not None and spec.count_crashes and not outage
        outcome = Out.LEASE_LOST if outage else Out.ABANDONED
        lost = "lease lost in a database outage" if outage else "lease expired"
        row = Row(r["id"], attempt_id=r["attempt_id"])
        if charge and r["failures"] + 1 >= r["max_attempts"]:
            reason = f"{lost}; no attempts left"
            return [Move(S.RUNNING, S.FAILED, reason, outcome, charge=True)], row, "failed"
        if not (retry_safe or r["has_checkpoint"]):
            reason = "worker lost mid-run; it cannot safely run again from the start"
            return [Move(S.RUNNING, S.UNKNOWN, reason, outcome, charge=charge)], row, "unknown"
        delay = backoff(r["failures"] + 1 if charge else 1, base=retry_base, cap=retry_cap)
        row = Row(r["id"], attempt_id=r["attempt_id"], run_at=now + timedelta(seconds=delay))
        reason = f"{lost}; " + ("resuming" if r["has_checkpoint"] else "retrying")
        return [Move(S.RUNNING, S.QUEUED, reason, outcome, charge=charge)], row, "retried"

    async def reap(
        self,
        *,
        cancel_grace_seconds: float,
        batch: int = 100,
        retry_base: float = 1.0,
        retry_cap: float = 300.0,
    ) -> dict[str, int]:
        """Settle expired leases, unacknowledged cancels and passed deadlines.

        Any worker may run it; ``SKIP LOCKED`` plus the transition's compare-and-set mean two
        reapers never both act on one job. Returns counts by what was done.
        """
        counts: dict[str, int] = {}

        def count(key: str, moved: list[Moved]) -> None:
            counts[key] = counts.get(key, 0) + sum(m.ok for m in moved)

        if not await self.pool.fetchval(_reaper_due_sql(), cancel_grace_seconds):
            return counts  # the usual round: one statement, no transaction
        now = datetime.now(UTC)
        async with self.pool.acquire() as conn, conn.transaction():
            expired = await conn.fetch(q("job_expired_leases"), batch, _LIVE)
            for r in expired:
                row = Row(r["id"], attempt_id=r["attempt_id"])
                if r["state"] == S.CANCELLING:
                    reason = "timed_out" if r["cancel_reason"] == "timed_out" else "forced"
                    moves = [Move(S.CANCELLING, S.CANCELLED, reason, outcome=Out.ABANDONED)]
                    key = "cancel_forced"
                elif r["blind_effect_in_flight"]:
                    moves = [
                        Move(
                            S.RUNNING,
                            S.UNKNOWN,
                            "worker lost while a side effect was in flight",
                            outcome=Out.ABANDONED,
                        )
                    ]
                    key = "unknown"
                else:
                    moves, row, key = self._expired_lease_policy(r, now, retry_base, retry_cap)
                count(
                    key,
                    await transition(
                        conn,
                        actor=Actor.SYSTEM,
                        moves=moves,
                        rows=[row],
                        fence="attempt",
                        nominal=moves[0].target,
                    ),
                )
            overdue = await conn.fetch(q("job_cancel_overdue"), cancel_grace_seconds, batch)
            for r in overdue:
                reason = "timed_out" if r["cancel_reason"] == "timed_out" else "forced"
                count(
                    "cancel_forced",
                    await transition(
                        conn,
                        actor=Actor.SYSTEM,
                        moves=[Move(S.CANCELLING, S.CANCELLED, reason, outcome=Out.REVOKED)],
                        rows=[Row(r["id"], attempt_id=r["attempt_id"])],
                        fence="attempt",
                        nominal=S.CANCELLED,
                    ),
                )
            late = await conn.fetch(
                q("job_past_deadline"), batch, [m.source.value for m in _DEADLINE_MOVES]
            )
            if late:
                count(
                    "timed_out",
                    await transition(
                        conn,
                        actor=Actor.SYSTEM,
                        moves=_DEADLINE_MOVES,
                        rows=[Row(r["id"]) for r in late],
                        fence="none",
                        nominal=S.CANCELLED,
                        cancel_by="system",
                        cancel_reason="timed_out",
                    ),
                )
        return {k: v for k, v in counts.items() if v}
