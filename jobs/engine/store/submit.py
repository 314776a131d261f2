"""Creating jobs: one at a time or many in one statement, with idempotency keys and quotas.

A submit validates the parameters with the kind's model and writes the job, its creation event
(a notice when it has an origin) and the wake-up of a waiting worker (``job_wake``) in one
statement; a repeated idempotency key returns the job it already made, and a key reused for
another request is refused.

A little over 400 lines on purpose: the single and the bulk submit share the parameter
checks, the idempotency rules and the quotas, which would otherwise live in a third module
that both import for no other reason.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg

import jobs.limits as limits
from jobs.engine.db import Conn
from jobs.engine.ids import new_public_id, new_public_ids
from jobs.engine.line import PRIORITY_MAX, PRIORITY_MIN
from jobs.engine.store.base import Base, KindSpec
from jobs.engine.views import JobView
from jobs.errors import (
    ErrandError,
    IdempotencyConflict,
    InvalidParams,
    QuotaExceeded,
)
from jobs.limits import InvalidInput
from jobs.traces import TRACEPARENT


@dataclass(frozen=True)
class Submission:
    """One job to create with :meth:`Submits.submit_many` (the arguments of ``submit``)."""

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    requester: str = "api"
    origin: dict[str, Any] | None = None
    origin_group: str | None = None
    idempotency_key: str | None = None
    priority: int | None = None
    """-10 to 10, higher first; None: the kind's own (``@kind(priority=...)``, default 0)."""
    run_at: datetime | None = None
    """When it becomes due (a delayed job); None: now."""
    where: str | None = None
    """How a refusal names this row ("line 3" of a file); ``row N``, counted from 1, if None."""
    traceparent: str | None = None
    """The submitter's span (W3C traceparent, jobs/traces.py), which the job's spans join."""


def checked_priority(priority: int | None, spec: KindSpec) -> int:
    """The priority a job gets: the submit's, else its kind's. Raises InvalidInput."""
    if priority is None:
        return spec.priority
    return limits.integer("priority", priority, PRIORITY_MIN, PRIORITY_MAX)


def checked_run_at(run_at: datetime | None) -> datetime | None:
    """A due time with its timezone (a naive one is ambiguous). Raises InvalidInput."""
    if run_at is not None and run_at.utcoffset() is None:
        raise InvalidInput("run_at: give a time with its timezone (e.g. UTC)")
    return run_at


def _traceparent(value: str | None) -> str | None:
    """A W3C traceparent to store, or None (none given, or not one)."""
    return value if value and TRACEPARENT.match(value) else None


def _named(n: int, sub: Submission) -> str:
    return sub.where or f"row {n + 1}"


class _ValidParams:
    """The params of a bulk submit: each kind checks, validates and writes as JSON each distinct
    params object, and empty params, once (the rows keep the objects alive, so their ids hold)."""

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


# The columns of job_insert_many, each sent as an array (a value per row) or, when all rows share
# one value, as that value: (the array parameter, the shared-value parameter).
_BULK_COLUMNS = (
    ("kinds", "kind"),
    ("params_each", "params"),
    ("requesters", "requester"),
    ("origins", "origin"),
    ("origin_groups", "origin_group"),
    ("idempotency_keys", "idempotency_key"),
    ("max_attempts_each", "max_attempts"),
    ("deadline_seconds_each", "deadline_seconds"),
    ("priorities", "priority"),
    ("run_ats", "run_at"),
    ("traceparents", "traceparent"),
)


def bulk_arguments(public_ids: list[str], columns: Sequence[list[Any]]) -> dict[str, Any]:
    """The parameters of ``job_insert_many``: the public ids, and each other column as an array
    or, when its rows all hold one value, as that value alone (with a NULL array). Encoding an
    array costs asyncpg a type check per element and the server parses JSON text per row: a
    batch of one kind, one requester and one origin sends one array instead of nine."""
    out: dict[str, Any] = {"public_ids": public_ids}
    for (each, shared), column in zip(_BULK_COLUMNS, columns, strict=True):
        first = column[0] if column else None
        if column.count(first) == len(column):  # all the same, compared in C
            out[each], out[shared] = None, first
        else:
            out[each], out[shared] = column, None
    return out


def _same_request(existing: asyncpg.Record, kind: str, params: dict[str, Any]) -> JobView:
    """The job an idempotency key already made, when this submit asks for the same thing.

    Raises:
        IdempotencyConflict: another kind or other params under the same key.
    """
    job = JobView.from_record(existing)
    if job.kind != kind or existing["params"] != params:
        raise IdempotencyConflict(str(existing["idempotency_key"]), job.public_id)
    return job


def _collided(exc: asyncpg.UniqueViolationError, index: str) -> bool:
    return index in str(exc.constraint_name or "")


class Submits(Base):
    """``submit`` and ``submit_many``."""

    async def submit(
        self,
        kind: str,
        params: dict[str, Any],
        *,
        requester: str,
        origin: dict[str, Any] | None = None,
        origin_group: str | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        run_at: datetime | None = None,
        traceparent: str | None = None,
    ) -> tuple[JobView, bool]:
        """Create a job, or return the one this idempotency key already made.

        ``priority`` (-10 to 10, higher first) defaults to the kind's; ``run_at`` makes it a
        delayed job, due then (cancel it before then and it never runs); ``traceparent`` is the
        submitter's span, which the job's spans join (one that is not a W3C traceparent is
        left out).

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
        rank = checked_priority(priority, spec)
        due = checked_run_at(run_at)
        values = {
            "kind": kind,
            "params": clean,
            "requester": requester,
            "origin": origin or {},
            "origin_group": origin_group,
            "idempotency_key": idempotency_key,
            "max_attempts": spec.max_attempts,
            "deadline_seconds": spec.deadline_seconds,
            "priority": rank,
            "run_at": due,
            "traceparent": _traceparent(traceparent),
        }
        if self.quotas.per_requester is None and (
            self.quotas.per_group is None or origin_group is None
        ):
            # The fast path: one statement (job, event and notice, wake-up) is its own
            # transaction; no BEGIN/COMMIT, no read before the write, and a connection kept
            # from the submit before (jobs/engine/lane.py).
            conn = await self.lane.take()
            try:
                made = await self._insert(conn, values)
            except BaseException:
                await self.lane.put(conn, failed=True)
                raise
            await self.lane.put(conn)
            return made
        async with self.pool.acquire() as conn, conn.transaction():
            if idempotency_key is not None:
                existing = await self.sql.fetchrow(
                    conn, "job_by_idempotency_key", key=idempotency_key
                )
                if existing is not None:
                    return _same_request(existing, kind, clean), False
            await self._check_quotas(conn, requester, origin_group)
            return await self._insert(conn, values)

    async def _insert(self, conn: Conn, values: dict[str, Any]) -> tuple[JobView, bool]:
        """Insert one job (``job_insert``), retrying a public-id collision."""
        for _ in range(5):
            try:
                if conn.is_in_transaction():
                    # Inside a transaction (quotas) a savepoint keeps it usable after a collision.
                    async with conn.transaction():
                        record = await self.sql.fetchrow(
                            conn, "job_insert", public_id=new_public_id(), **values
                        )
                else:
                    record = await self.sql.fetchrow(
                        conn, "job_insert", public_id=new_public_id(), **values
                    )
            except asyncpg.UniqueViolationError as exc:
                if _collided(exc, "public_id"):
                    continue
                raise
            if record is None:  # the idempotency key exists (maybe from a concurrent submit)
                key = values["idempotency_key"]
                record = await self.sql.fetchrow(conn, "job_by_idempotency_key", key=key)
                assert record is not None
                return _same_request(record, values["kind"], values["params"]), False
            return JobView.from_record(record), True
        raise RuntimeError("could not allocate a public id")  # pragma: no cover

    async def submit_many(self, submissions: Sequence[Submission]) -> list[tuple[str, bool]]:
        """Create many jobs in one statement; each row honours its own idempotency key.

        Every job gets what :meth:`submit` gives it (its creation event, a notice when it has an
        origin, a wake-up for a waiting worker). All rows are validated first: one bad row raises
        and nothing is created. A row whose key exists (or repeats an earlier row's key in
        this batch) refers to the job that key made.

        Returns:
            For each submission in order: its job's public id and whether this call created it.

        Raises:
            UnknownKind, InvalidParams: naming the row (its ``where``, else counted from 1);
                nothing was created.
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
        ranks: list[int] = []
        for n, sub in enumerate(submissions):
            try:
                limits.text("kind", sub.kind)
                limits.text("requester", sub.requester)
                if sub.idempotency_key is not None:
                    limits.text("idempotency key", sub.idempotency_key)
                if sub.origin_group is not None:
                    limits.text("origin group", sub.origin_group)
                origins.check(sub.origin)
                spec = self.registry.get(sub.kind)
                clean, text = valid.clean(sub.kind, spec, sub.params)
                ranks.append(checked_priority(sub.priority, spec))
                checked_run_at(sub.run_at)
                cleaned.append(clean)
                texts.append(text)
            except ErrandError as exc:
                exc.args = (f"{_named(n, sub)}: {exc}",)  # same type, the row named in it
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
                    priority=s.priority,
                    run_at=s.run_at,
                    traceparent=s.traceparent,
                )
                out.append((job.public_id, created))
            return out
        # A key repeated inside the batch is inserted once; the later rows refer to it, and must
        # ask for the same thing.
        first_of: dict[str, int] = {}
        firsts: list[int] = []
        for n, sub in enumerate(submissions):
            key = sub.idempotency_key
            if key is not None:
                if key in first_of:
                    first = first_of[key]
                    if (sub.kind, cleaned[n]) != (submissions[first].kind, cleaned[first]):
                        raise InvalidParams(
                            f"{_named(n, sub)}: idempotency key {key!r} is used by "
                            f"{_named(first, submissions[first])} for a different request"
                        )
                    continue
                first_of[key] = n
            firsts.append(n)
        existing: dict[str, str] = {}  # key -> the public id of the job it made
        for _ in range(5):
            if first_of:
                # A key that made a job already must ask for the same thing; its row is left
                # out. Read before anything is written, and again after a key was taken meanwhile.
                for r in await self.sql.fetch(
                    self.pool, "job_by_idempotency_keys", keys=list(first_of)
                ):
                    n = first_of[r["idempotency_key"]]
                    existing[r["idempotency_key"]] = _same_request(
                        r, submissions[n].kind, cleaned[n]
                    ).public_id
            rows = [n for n in firsts if submissions[n].idempotency_key not in existing]
            ids = new_public_ids(len(rows))
            if not rows:
                break
            args = bulk_arguments(
                ids,
                [
                    [submissions[n].kind for n in rows],
                    [texts[n] for n in rows],
                    [submissions[n].requester for n in rows],
                    [origins.text(submissions[n].origin) for n in rows],
                    [submissions[n].origin_group for n in rows],
                    [submissions[n].idempotency_key for n in rows],
                    [specs[n].max_attempts for n in rows],
                    [specs[n].deadline_seconds for n in rows],
                    [ranks[n] for n in rows],
                    [submissions[n].run_at for n in rows],
                    [_traceparent(submissions[n].traceparent) for n in rows],
                ],
            )
            try:
                await self.sql.fetchval(self.pool, "job_insert_many", **args)
            except asyncpg.UniqueViolationError as exc:
                # Nothing was written (the statement is its own transaction): new public ids,
                # or a key a concurrent submit took since the read above.
                if _collided(exc, "public_id") or _collided(exc, "idempotency_key"):
                    continue
                raise
            break
        else:  # pragma: no cover
            raise RuntimeError("could not insert the batch")
        made = dict(zip(rows, ids, strict=True))
        # A later row repeating a key of this batch refers to the job its first row made.
        existing |= {
            str(submissions[n].idempotency_key): made[n]
            for n in rows
            if submissions[n].idempotency_key is not None
        }
        return [
            (made[n], True) if n in made else (existing[str(sub.idempotency_key)], False)
            for n, sub in enumerate(submissions)
        ]

    async def _check_quotas(self, conn: Conn, requester: str, group: str | None) -> None:
        # A per-requester/group advisory lock makes count-then-insert safe against a burst of
        # concurrent submits from one person.
        if self.quotas.per_requester is not None:
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 1))", requester)
            count = await self.sql.fetchval(
                conn, "job_count_active_by_requester", requester=requester
            )
            if count >= self.quotas.per_requester:
                raise QuotaExceeded(
                    f"quota reached: {count} of {self.quotas.per_requester} active jobs for you; "
                    "wait for one to finish or cancel one"
                )
        if self.quotas.per_group is not None and group is not None:
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 2))", group)
            count = await self.sql.fetchval(conn, "job_count_active_by_group", origin_group=group)
            if count >= self.quotas.per_group:
                raise QuotaExceeded(
                    f"quota reached: {count} of {self.quotas.per_group} active jobs here; "
                    "wait for one to finish"
                )
