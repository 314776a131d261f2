"""Secrets are masked by value: a model provider that echoes the API key in its 401 error does
not get the key into the job record, the worker's log, the CLI's JSON or any Discord message."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from bot.client import ErrandBot
from tests.e2e.conftest import Errand
from tests.fakes.chat_server import chat_server
from tests.support.cli import CLI, ROOT, cli_environment, run_cli
from tests.support.polling import poll

# No recognisable shape (no "sk-", no "key=" around it): only masking by value can catch it.
KEY = "Zq8xY2w9-provider-secret-Lm4Pn7Rb3Vt6"


async def _database_as_text(errand: Errand) -> str:
    tables = await errand.pool.fetch(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    )
    parts = []
    for t in tables:
        name = t["tablename"]
        parts.append(
            await errand.pool.fetchval(
                f"SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM \"{name}\" t"
            )
        )
    return "\n".join(parts)


async def test_a_provider_echoing_the_api_key_leaks_it_nowhere(
    errand: Errand, bot: ErrandBot, tmp_path: Path
) -> None:
    """An agent job whose provider answers 401 quoting the key: the job fails with a reason that
    says why, and the key appears in no database row, no line of the worker's log, no CLI JSON
    and no version of any message in the emulator."""
    script = [{"status": 401, "echo_key": True}]
    async with chat_server({"echo": script}) as server:
        env = cli_environment(errand.dsn, tmp_path / "data") | {
            "ERRAND_AGENT_BASE_URL": server.url,
            "ERRAND_AGENT_API_KEY": KEY,
            "ERRAND_AGENT_MAX_RETRIES": "0",
        }
        log = tmp_path / "worker.log"
        with log.open("wb") as sink:
            worker = await asyncio.create_subprocess_exec(
                *CLI, "worker", env=env, cwd=ROOT, stdout=sink, stderr=sink
            )
        try:
            _, public_id = await errand.summon(
                "[script:echo] summarise the logs", kind="agent", params=None
            )
            job = await poll(
                lambda: _ended(errand, public_id),
                within=30,
            )
            assert job.state.value == "failed"
            assert "Incorrect API key provided: ***" in (job.reason or "")
            assert server.authorizations == [f"Bearer {KEY}"]  # the key was really sent
            thread = await errand.thread_of(public_id)
            await poll(lambda: errand.notices(thread), within=15)
            outputs = [
                await run_cli(env, "job", "status", public_id, "--json"),
                await run_cli(env, "job", "list", "--json"),
                await run_cli(env, "job", "show", public_id, "--json"),
                await run_cli(env, "job", "status", public_id),
            ]
        finally:
            worker.send_signal(signal.SIGTERM)
            await asyncio.wait_for(worker.wait(), 20)
    assert all(o.code == 0 for o in outputs), [o.err for o in outputs]
    assert public_id in outputs[0].out
    for ran in outputs:
        assert KEY not in ran.out + ran.err
    assert KEY not in await _database_as_text(errand)
    worker_log = log.read_text()
    assert "Incorrect API key provided" in worker_log  # the failure was logged, masked
    assert KEY not in worker_log
    messages = list(errand.emu.state.messages.values())
    assert any("Incorrect API key provided" in m.content for m in messages)
    for message in messages:
        for version in message.versions:
            assert KEY not in f"{version.content} {version.embeds} {version.components}"


async def _ended(errand: Errand, public_id: str) -> object:
    job = await errand.job(public_id)
    return job if job.state.value in {"succeeded", "failed", "unknown"} else None
