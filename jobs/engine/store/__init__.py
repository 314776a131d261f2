"""The job store: every read and write of the job record, on PostgreSQL, one module per group
of verbs (as Oban's engine: one short function per verb).

State changes go through :func:`jobs.engine.transition.transition` with a policy of
:mod:`jobs.engine.policy`; the verbs turn rows that did not move into typed errors or answers.
The runtime's records of an attempt (steps, usage, effects, assets) are in
:mod:`jobs.engine.records`, a transport's notices in :mod:`jobs.engine.notices`, the operator's
reads and deletes in :mod:`jobs.engine.admin`: no SQL on the job tables lives outside
:mod:`jobs.engine`.
"""

from __future__ import annotations

from jobs.engine.store.base import Kinds, KindSpec, Quotas
from jobs.engine.store.kinds import KindRules
from jobs.engine.store.mailbox import Mailbox
from jobs.engine.store.operator import Operator
from jobs.engine.store.rates import Rates
from jobs.engine.store.reaper import Reaper, ReaperWatch
from jobs.engine.store.schedules import Schedules
from jobs.engine.store.submit import Submission
from jobs.engine.store.worker import WorkerVerbs

__all__ = ["JobStore", "KindSpec", "Kinds", "Quotas", "ReaperWatch", "Submission"]


class JobStore(Schedules, Operator, Mailbox, KindRules, WorkerVerbs, Reaper, Rates):
    """Reads and writes of the job record through one pool: submit (:mod:`.submit`), read
    (:mod:`.reads`), cancel and resolve (:mod:`.requests`), answer and tell (:mod:`.mailbox`),
    the worker's protocol (:mod:`.worker`), the reaper (:mod:`.reaper`), a kind's rules in the
    line (:mod:`.kinds`), recurring schedules (:mod:`.schedules`), rate budgets shared by the
    fleet (:mod:`.rates`) and an operator's retries, bulk actions and overview
    (:mod:`.operator`)."""
