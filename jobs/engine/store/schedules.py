"""Recurring schedules: add, list, pause, resume, remove; and the ticker's round, which
enqueues each due tick's job exactly once (its idempotency key is the schedule and the tick).

Any number of processes tick at once: a round locks the schedules it works on (``SKIP LOCKED``,
so others take the rest), and a tick enqueued twice, by a round that died before it recorded
its progress and the round after it, finds its key taken and makes no second job.
"""

from __future__ import annotations

from datetime import UTC, datetime

import jobs.limits as limits
from jobs.engine.schedule import CatchUp, Schedule, check_cron, next_tick, ticks_to_make
from jobs.engine.store.submit import Submission, Submits, checked_priority
from jobs.errors import ErrandError, InvalidParams
from jobs.logs import get_logger
from jobs.when import zone

log = get_logger("schedule")


class Schedules(Submits):
    """``add_schedule``, ``schedules``, ``pause_schedule``, ``resume_schedule``,
    ``remove_schedule`` and ``tick``."""

    async def add_schedule(
        self,
        name: str,
        *,
        cron: str,
        kind: str,
        params: dict[str, object],
        tz: str = "UTC",
        priority: int | None = None,
        origin: dict[str, object] | None = None,
        origin_group: str | None = None,
        catch_up: CatchUp = "last",
        by: str,
    ) -> Schedule:
        """A new schedule; its first job is made at its first tick from now.

        Raises:
            InvalidInput, InvalidParams: a bad name, cron expression, timezone, kind, params or
                priority, or a name already taken; nothing was created.
        """
        limits.text("schedule name", name, 64)
        if not name or not all(c.isalnum() or c in "._-" for c in name):
            raise InvalidParams("schedule name: use letters, digits, '.', '_' and '-'")
        try:
            cron = check_cron(limits.text("cron expression", cron))
            where = zone(limits.text("timezone", tz))
        except ValueError as exc:
            raise InvalidParams(str(exc)) from None
        spec = self.registry.get(kind)
        clean = spec.validate(dict(params))
        if priority is not None:
            checked_priority(priority, spec)
        if catch_up not in ("skip", "last"):
            raise InvalidParams("catch-up: skip or last")
        row = await self.sql.fetchrow(
            self.pool,
            "schedule_insert",
            name=name,
            cron=cron,
            tz=tz,
            kind=kind,
            params=clean,
            priority=priority,
            origin=origin or {},
            origin_group=origin_group,
            catch_up=catch_up,
            next_at=next_tick(cron, where, datetime.now(UTC)),
            created_by=by,
        )
        if row is None:
            raise InvalidParams(f"a schedule named {name!r} exists; remove it first")
        return Schedule.from_record(row)

    async def schedules(self) -> list[Schedule]:
        return [Schedule.from_record(r) for r in await self.sql.fetch(self.pool, "schedule_list")]

    async def _get_schedule(self, name: str) -> Schedule:
        row = await self.sql.fetchrow(self.pool, "schedule_get", name=limits.text("name", name))
        if row is None:
            raise InvalidParams(f"no schedule named {name!r}")
        return Schedule.from_record(row)

    async def pause_schedule(self, name: str) -> Schedule:
        """Stop enqueueing a schedule's ticks. Raises InvalidParams (no such schedule)."""
        await self._get_schedule(name)
        row = await self.sql.fetchrow(
            self.pool, "schedule_set_paused", name=name, paused=True, next_at=None
        )
        return Schedule.from_record(row)

    async def resume_schedule(self, name: str) -> Schedule:
        """Enqueue a schedule's ticks again, from its next tick from now (the ticks it missed
        while paused are not made up)."""
        found = await self._get_schedule(name)
        after = next_tick(found.cron, found.zone, datetime.now(UTC))
        row = await self.sql.fetchrow(
            self.pool, "schedule_set_paused", name=name, paused=False, next_at=after
        )
        return Schedule.from_record(row)

    async def remove_schedule(self, name: str) -> None:
        """Remove a schedule; the jobs it made stay. Raises InvalidParams (no such schedule)."""
        if await self.sql.fetchval(self.pool, "schedule_delete", name=name) is None:
            raise InvalidParams(f"no schedule named {name!r}")

    async def tick(self, *, now: datetime | None = None, limit: int = 50) -> int:
        """One round of the ticker: enqueue every due tick of the schedules no other round
        holds, and advance them; how many jobs it made (a tick another round already made
        counts none). ``now``: a test's clock instead of the database's."""
        # Most rounds find nothing due: one statement then, not BEGIN, a locking read, COMMIT.
        if not await self.sql.fetchval(self.pool, "schedule_any_due", now=now):
            return 0
        made = 0
        async with self.pool.acquire() as conn, conn.transaction():
            for r in await self.sql.fetch(conn, "schedule_due", now=now, limit=limit):
                found = Schedule.from_record(r)
                try:
                    chosen, after = ticks_to_make(
                        found.cron, found.zone, found.next_at, r["checked_at"], found.catch_up
                    )
                    rows = [
                        Submission(
                            found.kind,
                            found.params,
                            f"schedule:{found.name}",
                            found.origin or None,
                            found.origin_group,
                            found.key(t),
                            found.priority,
                            run_at=t,
                        )
                        for t in chosen
                    ]
                    done = await self.submit_many(rows) if rows else []
                except (ErrandError, ValueError) as exc:
                    # Its kind is unknown here (another process runs it), or its params no
                    # longer fit the kind: left for a process that can, and logged.
                    log.warning("schedule.tick_failed", schedule=found.name, error=str(exc)[:300])
                    continue
                made += sum(1 for _, created in done if created)
                await self.sql.execute(
                    conn,
                    "schedule_advance",
                    name=found.name,
                    next_at=after,
                    last_tick=chosen[-1] if chosen else None,
                )
        return made
