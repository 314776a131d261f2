"""Nothing a built-in kind does blocks the worker's event loop while a worker (a fresh process,
``openai`` not yet imported) starts an ``agent`` job: ``openai`` (about a second to import) is
imported off the loop's thread, and a probe on the loop sees no long stall.

The thread is the proof; the stall bound (500 ms) only catches gross blocking, since a loaded
CI machine delays a process by a hundred milliseconds or more on its own (CI saw 161 ms with
the import off the loop). How short the stalls are is a speed figure, for bench/."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from tests.fakes.chat_server import chat_server

ROOT = Path(__file__).resolve().parents[2]


async def test_an_agent_job_starting_imports_openai_off_the_event_loop(
    db_dsn: str, tmp_path: Path
) -> None:
    catalog = tmp_path / "commands.toml"
    catalog.write_text("")
    async with chat_server({"quick": [{"content": "done"}]}) as server:
        env = os.environ | {
            "PYTHONPATH": str(ROOT),
            "ERRAND_COMMAND_CATALOG": str(catalog),
            "ERRAND_AGENT_BASE_URL": server.url,
            "ERRAND_AGENT_MODEL": "fake-model",
            "ERRAND_AGENT_API_KEY": "sk-test-lag-key-0123456789",
            "ERRAND_AGENT_MAX_RETRIES": "0",
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.integration.loop_lag_probe",
            db_dsn,
            env=env,
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()[-2000:]
    report = json.loads(out.decode().strip().splitlines()[-1])
    assert report["openai_imported_before"] is False
    assert report["openai_imported_after"] is True
    assert report["state"] == "succeeded", report
    assert report["ticks"] > 10
    assert report["openai_imported_in"] not in (None, report["loop_thread"]), report
    assert report["max_lag_ms"] < 500, report
    assert server.count("quick") == 1
    print(f"loop lag while an agent job starts: {report}")
