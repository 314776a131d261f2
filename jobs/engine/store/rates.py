"""Rate budgets shared by every worker: ``take_rate`` takes an amount from a scope's budget per
window (requests or tokens per minute of a model provider) or says how long until it could.

One transaction per take: the scope's row is locked first, so takers queue, and the budget is
read in a statement of its own after the lock (docs/state-machine.md, "A cancel racing a
claim", says why the read must come after the lock).
"""

from __future__ import annotations

from jobs.engine.store.base import Base


class Rates(Base):
    """``take_rate``."""

    async def take_rate(
        self, scope: str, amount: int, per_window: int, window: float = 60.0
    ) -> float:
        """Take ``amount`` from ``scope``'s budget of ``per_window`` in any ``window`` seconds:
        0.0 when taken, else the seconds until enough is free (nothing taken)."""
        async with self.pool.acquire() as conn, conn.transaction():
            await self.sql.fetchval(conn, "rate_lock", scope=scope)
            row = await self.sql.fetchrow(
                conn,
                "rate_take",
                scope=scope,
                amount=amount,
                per_window=per_window,
                window=window,
            )
        assert row is not None  # one row, always
        return 0.0 if row["ok"] else max(float(row["wait"]), 0.01)
