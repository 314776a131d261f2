"""Prometheus metrics: what this process did (counters, histograms) and what the database holds.

Two kinds of numbers, kept apart on purpose:

- **Process metrics** count what happened in *this* process (transitions it wrote, attempts it
  ran, cancels it answered). They live in :data:`REGISTRY`, fed by the engine and the worker
  through :mod:`jobs.engine.observe` (:class:`EngineMetrics`, registered when this module is
  imported). A transport defines its own metrics on the same registry (``bot/metrics.py``: Discord
  429s, retries, notices delivered), so one ``/metrics`` serves both. Sum them over replicas.
- **Database gauges** (jobs by state and kind, queue lag, outbox backlog and delivery lag) are
  read from PostgreSQL when ``/metrics`` is scraped (:class:`DatabaseCollector`), so every
  replica reports the same truth; take ``max`` over replicas, never ``sum``.

"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from jobs.engine import observe
from jobs.engine.admin import Gauges, read_gauges
from jobs.engine.moves import AttemptOutcome, CancelOutcome, Moved, Policy
from jobs.engine.state import State
from jobs.engine.views import Claim

if TYPE_CHECKING:
    import asyncpg


# The *_created series double every counter and histogram and no dashboard of ours reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]  # untyped upstream

REGISTRY = CollectorRegistry(auto_describe=True)
"""Process metrics of Errand (plus the standard process_*, python_* collectors)."""
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)

# Jobs run for milliseconds (noop) to hours (agents, commands); the buckets span both.
_DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, float("inf"))
_LATENCY_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, float("inf"))

TRANSITIONS = Counter(
    "errand_job_transitions",
    "State changes written by this process, by edge and actor.",
    ["from_state", "to_state", "actor"],
    registry=REGISTRY,
)
STALE_WRITES = Counter(
    "errand_job_stale_writes",
    "Writes refused because the attempt lost its lease or the job had ended (ignored events).",
    ["actor"],
    registry=REGISTRY,
)
LEASE_EXPIRIES = Counter(
    "errand_lease_expiries",
    "Attempts whose lease expired and that the reaper in this process ended (abandoned).",
    ["kind"],
    registry=REGISTRY,
)
JOB_DURATION = Histogram(
    "errand_job_duration_seconds",
    "Wall time of one attempt in this worker, from claim to its end, by kind and outcome.",
    ["kind", "outcome"],
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
START_LATENCY = Histogram(
    "errand_job_start_latency_seconds",
    "From when a job became due (submitted, or its retry time) to its claim, by kind.",
    ["kind"],
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
ATTEMPTS_RUNNING = Gauge(
    "errand_attempts_running",
    "Attempts this worker process is running now, by kind.",
    ["kind"],
    registry=REGISTRY,
)
CANCELS = Counter(
    "errand_cancels",
    "Cancel requests answered by this process, by outcome "
    "(cancelled, cancelling, already_cancelling, too_late).",
    ["outcome"],
    registry=REGISTRY,
)
# -- what the engine and the worker tell us (jobs/engine/observe.py) --------------------------


# How an attempt ends when its lease expired (a crash, or a database outage).
_LEASE_EXPIRED = (AttemptOutcome.ABANDONED, AttemptOutcome.LEASE_LOST)


@cache
def _child(metric: Counter | Gauge | Histogram, *labels: str) -> Any:
    """``metric.labels(*labels)``, looked up once: a worker counts several times per job, and
    ``labels()`` (validation, a lock) costs more than the count itself."""
    return metric.labels(*labels)


class EngineMetrics(observe.Observer):
    """Counts what the engine and the worker of this process did."""

    def transitions_written(self, policy: Policy, moved: Sequence[Moved]) -> None:
        outcome_by_source = {m.source: m.outcome for m in policy.moves}
        edges: dict[tuple[str, str], int] = {}
        for m in moved:
            if m.target is None:
                if policy.fence == "attempt":  # kept as an ignored event
                    _child(STALE_WRITES, policy.actor.value).inc()
                continue
            edge = (m.source.value, m.target.value)
            edges[edge] = edges.get(edge, 0) + 1
            if outcome_by_source.get(m.source) in _LEASE_EXPIRED:
                _child(LEASE_EXPIRIES, str(m.kind)).inc()
        for (source, target), count in edges.items():  # one count per edge, not per job
            _child(TRANSITIONS, source, target, policy.actor.value).inc(count)

    def claimed(self, claims: Sequence[Claim]) -> None:
        for c in claims:
            if c.since_due is not None:
                _child(START_LATENCY, c.kind).observe(max(0.0, c.since_due.total_seconds()))
        if claims:
            _child(TRANSITIONS, State.QUEUED.value, State.RUNNING.value, "worker").inc(len(claims))

    def cancel_answered(self, answer: CancelOutcome) -> None:
        _child(CANCELS, str(answer.outcome)).inc()

    def attempt_started(self, kind: str) -> None:
        _child(ATTEMPTS_RUNNING, kind).inc()

    def attempt_ended(self, kind: str, outcome: AttemptOutcome | None, seconds: float) -> None:
        _child(ATTEMPTS_RUNNING, kind).dec()
        _child(JOB_DURATION, kind, str(outcome) if outcome else "lost").observe(seconds)


ENGINE_METRICS = EngineMetrics()
# Registered on import: whatever process imports this module (every one that serves /metrics)
# counts what its engine and worker do from then on.
observe.register(ENGINE_METRICS)


# -- database gauges, read at scrape time ----------------------------------------------------


class DatabaseCollector(Collector):
    """Gauges computed from PostgreSQL; :meth:`refresh` before each render."""

    def __init__(self, kinds: Iterable[str] = ()) -> None:
        self.kinds = sorted(kinds)
        self.snapshot = Gauges(up=False)

    async def refresh(self, pool: asyncpg.Pool, within: float = 5.0) -> None:
        """Read the gauges; on a database error the snapshot says ``up = False``."""
        import asyncpg

        try:
            gauges = await read_gauges(pool, within)
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
            self.snapshot = Gauges(up=False)
            return
        self.snapshot = gauges

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        up = GaugeMetricFamily(
            "errand_database_up", "1 when the last scrape could read the database."
        )
        up.add_metric([], 1.0 if snap.up else 0.0)
        yield up
        if not snap.up:
            return
        jobs = GaugeMetricFamily(
            "errand_jobs", "Jobs in the database by state and kind.", labels=["state", "kind"]
        )
        counts: Mapping[tuple[str, str], int] = {
            **{(s.value, k): 0 for s in State for k in self.kinds},
            **snap.jobs,
        }
        for (state, kind), count in sorted(counts.items()):
            jobs.add_metric([state, kind], float(count))
        yield jobs
        lag = GaugeMetricFamily(
            "errand_queue_lag_seconds",
            "How long the oldest due queued job has waited (0 when none waits).",
        )
        lag.add_metric([], snap.queue_lag_seconds)
        yield lag
        depth = GaugeMetricFamily(
            "errand_queue_depth",
            "Queued jobs by kind and priority: due now (due) or put off (later).",
            labels=["kind", "priority", "when"],
        )
        for (kind, priority, when), count in sorted(snap.queue_depth.items()):
            depth.add_metric([kind, str(priority), when], float(count))
        yield depth
        throttled = GaugeMetricFamily(
            "errand_jobs_throttled",
            "Due queued jobs held back by their kind's pause, limit or start rate.",
            labels=["kind", "why"],
        )
        for (kind, why), count in sorted(snap.throttled.items()):
            throttled.add_metric([kind, why], float(count))
        yield throttled
        outbox = GaugeMetricFamily(
            "errand_outbox_notices",
            "Undelivered outbox notices: pending (to be delivered) and dead (dead-lettered).",
            labels=["status"],
        )
        for status in ("pending", "dead"):
            outbox.add_metric([status], float(snap.outbox.get(status, 0)))
        yield outbox
        oldest = GaugeMetricFamily(
            "errand_outbox_oldest_pending_seconds",
            "Age of the oldest pending outbox notice: the delivery lag (0 when none pends).",
        )
        oldest.add_metric([], snap.outbox_oldest_pending_seconds)
        yield oldest


class _ProcessMetrics(Collector):
    """:data:`REGISTRY`'s metrics, as one collector of a scrape's registry."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def exposed(pool: asyncpg.Pool | None, collector: DatabaseCollector | None) -> CollectorRegistry:
    """What ``/metrics`` shows: process metrics, then (with a pool) the database gauges.

    Refresh ``collector`` before each scrape; the registry only reads its last snapshot.
    """
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ProcessMetrics())
    if pool is not None and collector is not None:
        registry.register(collector)
    return registry


def samples(text: str) -> dict[str, float]:
    """Parse an exposition into ``{'name{label="v",...}': value}`` (for tests and operators)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


__all__: list[str] = [
    "ENGINE_METRICS",
    "REGISTRY",
    "DatabaseCollector",
    "EngineMetrics",
    "exposed",
    "samples",
]
