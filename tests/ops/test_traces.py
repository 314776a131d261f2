"""Job-scoped traces across processes (issue 33): with the otel extra and an OTLP endpoint (a
local receiver parsing real OTLP/HTTP protobuf), one ``/summon`` through a real ``errand bot``,
a real ``errand worker`` and the bot's delivery gives one trace, whose spans link up across the
processes; no secret is in any attribute. Without the extra (or without an endpoint) nothing
imports ``opentelemetry``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from discord_emulator import Emulator
from discord_emulator.testing import World
from tests.fakes.chat_server import chat_server
from tests.fakes.otlp_receiver import otlp_receiver
from tests.support.cli import ROOT, WorkerProc, discord_env
from tests.support.http import http_get
from tests.support.polling import poll

API_KEY = "sk-trace-test-secret-0123456789"
CATALOG = """
[commands.echo]
description = "Say a word back"
argv = ["echo", "{word}"]
retry_safe = true
agent_tool = true
[commands.echo.params.word]
pattern = "[a-z]{1,20}"
"""


async def test_one_summon_gives_one_trace_across_the_bot_the_worker_and_delivery(
    emu: Emulator,
    world: World,
    pool: asyncpg.Pool,
    tmp_path: Path,
    spawn_errand: Callable[..., Awaitable[WorkerProc]],
) -> None:
    try:
        import opentelemetry.sdk  # noqa: F401  - what the processes export with
    except ImportError:
        pytest.fail("the otel extra is not installed: pip install -e '.[test,otel]'")
    catalog = tmp_path / "commands.toml"
    catalog.write_text(CATALOG)
    scripts: dict[str, list[dict[str, Any]]] = {
        "trace": [
            {"tool_calls": [{"name": "echo", "arguments": {"word": "hello"}}]},
            {"content": "said hello"},
        ]
    }
    async with otlp_receiver() as receiver, chat_server(scripts) as model:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "100",  # export within 0.1 s, not the default 5 s
            "ERRAND_COMMAND_CATALOG": str(catalog),
            "ERRAND_AGENT_BASE_URL": model.url,
            "ERRAND_AGENT_MODEL": "fake-model",
            "ERRAND_AGENT_API_KEY": API_KEY,
            "ERRAND_AGENT_MAX_RETRIES": "0",
        }
        bot = await spawn_errand("bot", **discord_env(emu), **env)
        await spawn_errand("worker", **env)

        async def ready() -> bool:
            return (await http_get(bot.port, "/readyz"))[0] == 200

        await poll(ready, within=30)
        handle = await emu.invoke_slash(
            world.alice,
            world.channel,
            "summon",
            {"task": "say hello [script:trace]", "kind": "agent"},
        )
        job_id = (await handle.wait_original(timeout=10)).content.split("`")[1]

        async def delivered() -> bool:
            row = await pool.fetchrow(
                "SELECT j.state::text AS state, bool_and(e.delivered_at IS NOT NULL) AS done"
                " FROM job j JOIN event e ON e.job_id = j.id AND e.notice_at IS NOT NULL"
                " WHERE j.public_id = $1 GROUP BY j.state",
                job_id,
            )
            return row is not None and row["state"] == "succeeded" and bool(row["done"])

        await poll(delivered, within=60, what="the job succeeded and every notice delivered")
        notices = await pool.fetchval(
            "SELECT count(*) FROM event e JOIN job j ON j.id = e.job_id"
            " WHERE j.public_id = $1 AND e.notice_at IS NOT NULL",
            job_id,
        )

        def complete() -> bool:
            # Each process exports its spans in batches of its own, so the bot's notices can
            # arrive before the worker's last batch: wait for every span this test reads.
            named = ("errand.summon", "errand.claim", "errand.attempt", "errand.step")
            return (
                len(receiver.named("errand.notice")) >= notices
                and len(receiver.named("errand.model_call")) >= 2
                and bool(receiver.named("errand.tool_call"))
                and all(receiver.named(name) for name in named)
            )

        await poll(complete, within=20, what="every span exported")
        token = discord_env(emu)["DISCORD_TOKEN"]

    [summon] = receiver.named("errand.summon")
    [claim] = receiver.named("errand.claim")
    [attempt] = receiver.named("errand.attempt")
    steps = receiver.named("errand.step")
    models = receiver.named("errand.model_call")
    [tool] = receiver.named("errand.tool_call")
    delivered_spans = receiver.named("errand.notice")
    # One trace, from the bot's /summon through the worker to every delivery.
    mine = [s for s in receiver.spans if s.attributes.get("errand.job") == job_id] + [summon]
    assert {s.trace_id for s in receiver.spans} == {summon.trace_id}
    assert summon.parent_id == ""  # the root
    assert claim.parent_id == summon.span_id
    assert attempt.parent_id == claim.span_id
    assert steps
    assert {s.parent_id for s in steps} == {attempt.span_id}
    step_ids = {s.span_id for s in steps}
    assert len(models) == 2
    assert {m.parent_id for m in models} <= step_ids
    assert tool.parent_id in step_ids
    assert tool.attributes["errand.tool"] == "echo"
    assert len(delivered_spans) == notices
    assert {n.parent_id for n in delivered_spans} == {summon.span_id}
    # Each process named as itself.
    assert {s.service for s in (summon, *delivered_spans)} == {"errand-bot"}
    assert {s.service for s in (claim, attempt, *steps, *models, tool)} == {"errand-worker"}
    assert {claim.attributes["errand.job"], attempt.attributes["errand.job"]} == {job_id}
    assert len(mine) >= 4
    # No secret anywhere: not the bot's token, not the model's key, in no attribute.
    values = [str(v) for s in receiver.spans for v in s.attributes.values()]
    assert values
    for secret in (token, API_KEY):
        assert not [v for v in values if secret in v]


PROBE = """
import importlib.abc, os, sys

class NoOtel(importlib.abc.MetaPathFinder):
    # The extra is not installed: opentelemetry cannot be imported.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry" and os.environ.get("NO_EXTRA"):
            raise ImportError("no otel extra")
        return None

sys.meta_path.insert(0, NoOtel())
import pkgutil, importlib
import jobs, bot, dashboard
for package in (jobs, bot, dashboard):
    for found in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(found.name)
from jobs.traces import tracing
on = tracing.setup("probe")
with tracing.span("errand.probe", job="x") as parent:
    assert parent is None and tracing.traceparent() is None
print(on, "opentelemetry" in sys.modules, any(m.startswith("opentelemetry") for m in sys.modules))
"""


def test_without_the_extra_or_an_endpoint_opentelemetry_is_never_imported(tmp_path: Path) -> None:
    """Every module of jobs/, bot/ and dashboard/ loaded and a span opened: with no endpoint
    set, nothing imports opentelemetry (installed or not); with an endpoint but the extra
    missing, nothing does either, and traces stay off."""
    base = {"PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for extra in ({}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "NO_EXTRA": "1"}):
        done = subprocess.run(
            [sys.executable, "-c", PROBE],
            env=base | extra,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        *logged, last = done.stdout.strip().splitlines()
        assert last.split() == ["False", "False", "False"], (extra, done.stdout)
        # Asked for traces without the extra: said once, in one line, and nothing breaks.
        assert ("pip install 'errand[otel]'" in "".join(logged)) == bool(extra)
