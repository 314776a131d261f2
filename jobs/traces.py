"""Job-scoped traces: OpenTelemetry spans for a job's submit, each claim, each attempt with its
steps, model calls and tool calls, and each notice's delivery, joined into one trace across the
processes by the W3C ``traceparent`` stored with the job (migration 0023).

Optional and off by default. Spans are made only when the extra is installed (``pip install
'errand[otel]'``) and ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) is set; they
go out over OTLP/HTTP, configured by the standard ``OTEL_*`` variables (service name, headers,
batch delays). Otherwise :data:`tracing` does nothing and ``opentelemetry`` is never imported:
each call is a check of one attribute.

No secret reaches a span: every attribute value is scrubbed (:func:`jobs.secrets.scrub`), and
only ids, names, numbers and states are recorded, never a job's parameters or task.
"""

from __future__ import annotations

import atexit
import os
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from jobs.logs import get_logger
from jobs.secrets import scrub

log = get_logger("traces")

ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
"""A W3C traceparent (version, trace id, parent span id, flags), as a job stores it."""

Attribute = str | int | float | bool | None
_OFF: AbstractContextManager[None] = nullcontext()


def wanted() -> bool:
    """Whether the environment asks for traces (an OTLP endpoint, the SDK not disabled)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(os.environ.get(name, "").strip() for name in ENDPOINTS)


class Tracing:
    """The process's spans: nothing until :meth:`setup` found the extra and an endpoint."""

    def __init__(self) -> None:
        self._tracer: Any = None
        self._propagator: Any = None
        self._done = False

    @property
    def on(self) -> bool:
        return self._tracer is not None

    def setup(self, service: str) -> bool:
        """Export this process's spans over OTLP when asked for; whether it does. Once per
        process; the spans still buffered are sent when it exits."""
        if self._done:
            return self.on
        self._done = True
        if not wanted():
            return False
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
            from opentelemetry.trace.propagation.tracecontext import (
                TraceContextTextMapPropagator,
            )
        except ImportError:
            log.warning(
                "traces.unavailable",
                why="OTEL_EXPORTER_OTLP_ENDPOINT is set but the otel extra is not installed",
                fix="pip install 'errand[otel]'",
            )
            return False
        # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, name the service instead.
        named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": f"errand-{service}"}
        provider = TracerProvider(resource=Resource.create(named))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        atexit.register(provider.shutdown)  # jobs.exits runs it before the process ends
        self._tracer = provider.get_tracer("errand")
        self._propagator = TraceContextTextMapPropagator()
        log.info("traces.exporting", service=named.get("service.name", "from OTEL_SERVICE_NAME"))
        return True

    def span(
        self, name: str, *, parent: str | None = None, **attributes: Attribute
    ) -> AbstractContextManager[str | None]:
        """A span around the block, the current span's child, or ``parent``'s (a traceparent
        from another process); yields its own traceparent (None when traces are off)."""
        if self._tracer is None:
            return _OFF  # on every job and step: no generator made when traces are off
        return self._span(name, parent, attributes)

    @contextmanager
    def _span(
        self, name: str, parent: str | None, attributes: dict[str, Attribute]
    ) -> Iterator[str | None]:
        context = None
        if parent and TRACEPARENT.match(parent):
            context = self._propagator.extract({"traceparent": parent})
        clean = {
            f"errand.{k}": scrub(v) if isinstance(v, str) else v
            for k, v in attributes.items()
            if v is not None
        }
        with self._tracer.start_as_current_span(name, context=context, attributes=clean):
            yield self.traceparent()

    def traceparent(self) -> str | None:
        """The current span's W3C traceparent, to store with a job (None: no span, or off)."""
        if self._propagator is None:
            return None
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier)
        found = carrier.get("traceparent")
        return found if found and TRACEPARENT.match(found) else None


tracing = Tracing()
"""This process's traces (every module uses this one)."""
