"""A local OTLP/HTTP trace receiver: the outer edge of the trace tests.

It accepts what a real collector accepts on ``POST /v1/traces`` (``application/x-protobuf``,
an ``ExportTraceServiceRequest``, parsed with OpenTelemetry's own protobuf classes) and answers
as one does; every span it received is kept, flattened, for the tests to assert: its trace,
its id and its parent's, its name, its attributes and the ``service.name`` of the process that
sent it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    service: str
    attributes: dict[str, Any]


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver:
    """The spans received so far."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        if request.content_type != "application/x-protobuf":
            return web.Response(status=415, text="protobuf only")
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.read())
        for resource_spans in message.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        ReceivedSpan(
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            name=span.name,
                            service=str(resource.get("service.name")),
                            attributes={a.key: _value(a.value) for a in span.attributes}
                            | {f"resource:{k}": v for k, v in resource.items()},
                        )
                    )
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    def named(self, name: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.name == name]


@asynccontextmanager
async def otlp_receiver() -> AsyncIterator[Receiver]:
    """A receiver on a free port of 127.0.0.1 (its base URL in ``.url``, the value of
    ``OTEL_EXPORTER_OTLP_ENDPOINT``)."""
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/v1/traces", receiver.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    receiver.url = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        await runner.cleanup()
