"""Kinds from a user's package: an ``errand.kinds`` entry point adds a kind, end to end."""

from __future__ import annotations

import textwrap
from pathlib import Path

import asyncpg
import pytest

from jobs.engine.store import JobStore
from jobs.runtime.registry import Registry
from tests.support.runtime import job_reaches, running_worker


def _install_plugin(root: Path) -> None:
    """A tiny installed distribution: a module and a dist-info with an entry point."""
    (root / "errand_plugin_hello.py").write_text(
        textwrap.dedent("""
        from pydantic import BaseModel
        from jobs.runtime.registry import Kind

        class Params(BaseModel):
            name: str = "world"

        async def hello(ctx, params):
            return {"greeting": f"hello, {params.name}"}

        hello_kind = Kind(name="plugin_hello", handler=hello, params=Params)
    """)
    )
    info = root / "errand_plugin_hello-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: errand-plugin-hello\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[errand.kinds]\nplugin_hello = errand_plugin_hello:hello_kind\n"
    )


def test_an_entry_point_adds_a_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution on sys.path with an errand.kinds entry point registers its kind, and its
    params are validated like a built-in's."""
    _install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry()
    loaded = registry.load_entry_points()
    assert "plugin_hello" in loaded
    assert registry.get("plugin_hello").validate({"name": "ann"}) == {"name": "ann"}


async def test_a_plugin_kind_runs_in_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: asyncpg.Pool, db_dsn: str
) -> None:
    """The plugin's kind is submitted and run like any other."""
    _install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry()
    registry.load_entry_points()
    store = JobStore(pool, registry)
    job, _ = await store.submit("plugin_hello", {"name": "ann"}, requester="t")
    async with running_worker(store, registry, db_dsn, tmp_path):
        done = await job_reaches(store, job.public_id, {"succeeded", "failed"})
    assert done.result == {"greeting": "hello, ann"}
