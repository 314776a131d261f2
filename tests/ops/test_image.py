"""The Dockerfile, executed for real without a container engine.

A small Dockerfile runner: ``dockerfile-parse`` reads the Dockerfile (stages, ARG substitution,
ENV key/value syntax) and the Docker SDK's own ``.dockerignore`` matcher
(``docker.utils.build.exclude_paths``, what ``docker build`` from Python sends as the context)
picks the build context. Each stage's ``/`` is a scratch directory; the base image
``python:3.11-slim`` is a virtual environment of the local Python 3.11. Then, as ``docker
build`` and ``docker run`` would:

1. the build context is exactly what ``.dockerignore`` lets through;
2. the build stage's ``COPY`` lines copy from that context, and its ``RUN`` lines run with
   ``/bin/sh -c`` (absolute paths in them point into the stage's root): ``pip wheel`` builds
   the wheel from the copied files, a fresh venv installs it, and ``errand --help`` runs. One
   change by default: the wheel is installed ``--no-deps`` and its dependencies come from this
   test's environment (``PYTHONPATH``), so this test alone does not prove the image resolves
   its dependencies. ``.ci/check-wheel`` does, on every CI run (the same ``pip install`` of
   the same wheel into a clean venv, from the package index), and
   ``ERRAND_IMAGE_TEST_FULL=1`` runs the line verbatim here;
3. the runtime stage starts from an empty root (same host path, so the copied venv's scripts
   keep working as they do at ``/opt/errand`` in the image) and gets only ``COPY --from=build``;
4. its ``ENTRYPOINT`` + ``CMD`` run with its ``ENV``, ``WORKDIR`` and ``USER``'s uid/gid against
   this test's database and the Discord emulator, and the ``HEALTHCHECK`` command itself runs
   until it passes.

Where the emulation differs from an engine, on purpose:

- the runtime stage's ``RUN`` (``groupadd``/``useradd``, ``chown /data``) is not run on the host
  (it would add a system user); its effect is reproduced: ``/data`` owned by the uid/gid it names,
  and the process runs as that uid/gid when the test runs as root;
- there is no network namespace: ``ERRAND_HEALTH_PORT`` is overridden with a free port, as ``docker
  run -e`` would, and the HEALTHCHECK's URL gets the same port (parallel tests would otherwise
  fight over 8080). The test checks the HEALTHCHECK, ``EXPOSE`` and ``ENV`` agree on the port.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from dockerfile_parse import DockerfileParser
from dockerfile_parse.util import extract_key_values

from discord_emulator import Emulator
from discord_emulator.testing import World
from tests.support.cli import ROOT
from tests.support.ports import free_port
from tests.support.relay import Relay

pytestmark = pytest.mark.slow

# A container path in an instruction: a "/" starting a word (after a space, =, a quote or the
# start of a PATH entry) and followed by a name. URLs ("http://127.0.0.1:8080/x") never match;
# what the base image itself provides (/dev/null, /usr/bin, ...) is the host's.
_CONTAINER_PATH = re.compile(
    r"(?:(?<=[\s=\"':])|^)/(?=[A-Za-z_])(?!(?:dev|proc|sys|usr|bin|etc|tmp)(?:/|\b))"
)


# ERRAND_IMAGE_TEST_FULL=1 runs the build stage's RUN lines exactly as written: the wheel's
# dependencies are resolved from the package index into the fresh venv (about 20 s of CPU; a
# minute or more on a loaded machine). By default the one change is `pip install --no-deps` for
# the built wheel, with the dependencies taken from this test's environment on PYTHONPATH: the
# wheel (built from the image's context) is still what runs, and resolving its dependencies from
# the index into a clean venv is what .ci/check-wheel checks on every CI run.
FULL_INSTALL = os.environ.get("ERRAND_IMAGE_TEST_FULL") == "1"
_WHEEL_INSTALL = re.compile(r"(\bpip install)(?= \S*/wheels/)")


@dataclass
class Stage:
    """One stage of the Dockerfile: its name, base image and instructions in order."""

    name: str | None
    base: str
    steps: list[tuple[str, str]] = field(default_factory=list)


def read_stages(dockerfile: Path) -> list[Stage]:
    parser = DockerfileParser(path=str(dockerfile), env_replace=False)
    stages: list[Stage] = []
    args = {
        key: value
        for step in parser.structure
        if step["instruction"] == "ARG" and not stages
        for key, value in extract_key_values(False, {}, {}, step["value"])
    }
    for step in parser.structure:
        instruction, value = step["instruction"], step["value"]
        if instruction == "FROM":
            words = value.split()
            image = re.sub(r"\$\{(\w+)\}", lambda m: args[m[1]], words[0])
            stages.append(Stage(words[2] if len(words) == 3 else None, image))
        elif stages and instruction != "COMMENT":
            stages[-1].steps.append((instruction, value))
    return stages


def build_context(root: Path, into: Path) -> None:
    """Copy what ``docker build`` would send: the repository minus ``.dockerignore``."""
    from docker.utils.build import exclude_paths

    lines = (root / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    for relative in sorted(exclude_paths(str(root), patterns)):
        source = root / relative
        if source.is_file() and not source.is_symlink():
            target = into / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


@dataclass
class Filesystem:
    """A stage's ``/`` on the host, with its working directory and environment."""

    root: Path
    env: dict[str, str]
    workdir: str = "/"

    def host(self, path: str) -> Path:
        """The host path of a container path (relative ones start at WORKDIR)."""
        absolute = path if path.startswith("/") else f"{self.workdir.rstrip('/')}/{path}"
        return self.root / absolute.lstrip("/")

    def mapped(self, text: str) -> str:
        """``text`` with its container paths pointing into this root."""
        return _CONTAINER_PATH.sub(f"{self.root}/", text)

    def set_env(self, value: str) -> None:
        self.env.update(extract_key_values(True, {}, self.env, self.mapped(value)))

    def copy(self, value: str, source_root: Path) -> None:
        """COPY: sources (files or directories' contents) from ``source_root`` to the dest."""
        words = shlex.split(value)
        words = [w for w in words if not w.startswith("--")]
        *sources, dest = words
        target = self.host(dest)
        into_dir = dest.endswith("/") or len(sources) > 1
        for src in sources:
            origin = source_root / src.lstrip("/")
            if not origin.exists():
                raise AssertionError(
                    f"COPY {src}: not found in the build context (excluded by .dockerignore?)"
                )
            if origin.is_dir():
                shutil.copytree(origin, target, dirs_exist_ok=True, symlinks=True)
            else:
                where = target / origin.name if into_dir else target
                where.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, where)


def run_build_stage(stage: Stage, fs: Filesystem, context: Path) -> None:
    for instruction, value in stage.steps:
        if instruction == "ENV":
            fs.set_env(value)
        elif instruction == "WORKDIR":
            fs.workdir = value
            fs.host(".").mkdir(parents=True, exist_ok=True)
        elif instruction == "COPY":
            fs.copy(value, context)
        elif instruction == "RUN":
            command = fs.mapped(value)
            if not FULL_INSTALL:
                command = _WHEEL_INSTALL.sub(r"\1 --no-deps", command)
            done = subprocess.run(
                ["/bin/sh", "-c", command],
                cwd=fs.host("."),
                env=fs.env,
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
            assert done.returncode == 0, f"RUN {value}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        else:
            raise AssertionError(f"the runner does not know {instruction} in the build stage")


@dataclass
class Runtime:
    """What the runtime stage leaves to ``docker run``."""

    fs: Filesystem
    entrypoint: list[str]
    cmd: list[str]
    healthcheck: list[str]
    health_timeout: float
    exposed: list[str]
    uid_gid: tuple[int, int] | None


def _seconds(text: str) -> float:
    return float(text.rstrip("s"))


def run_runtime_stage(stage: Stage, fs: Filesystem, stages: dict[str, Filesystem]) -> Runtime:
    entrypoint: list[str] = []
    cmd: list[str] = []
    healthcheck: list[str] = []
    timeout = 30.0
    exposed: list[str] = []
    owner: tuple[int, int] | None = None
    user: tuple[int, int] | None = None
    for instruction, value in stage.steps:
        if instruction in {"LABEL", "VOLUME"}:
            continue
        if instruction == "RUN":
            # Not run on the host (it would add a system user); its effect is reproduced.
            uid, gid = re.search(r"--uid (\d+)", value), re.search(r"--gid (\d+)", value)
            assert uid, value
            assert gid, value
            owner = int(uid[1]), int(gid[1])
            for made in re.findall(r"mkdir -p (\S+)", value):
                fs.host(made).mkdir(parents=True, exist_ok=True)
                if os.geteuid() == 0:
                    os.chown(fs.host(made), *owner)
        elif instruction == "COPY":
            source = re.search(r"--from=(\S+)", value)
            assert source, f"the runtime stage copies only from the build stage: {value}"
            fs.copy(value, stages[source[1]].root)
        elif instruction == "ENV":
            fs.set_env(value)
        elif instruction == "USER":
            assert value.split(":")[0] in {"errand", str(owner and owner[0])}
            user = owner
        elif instruction == "WORKDIR":
            fs.workdir = value
        elif instruction == "EXPOSE":
            exposed += value.split()
        elif instruction == "HEALTHCHECK":
            options, _, probe = value.partition(" CMD ")
            timeout = _seconds(re.search(r"--timeout=(\S+)", options)[1])  # type: ignore[index]
            healthcheck = json.loads(probe)
        elif instruction == "ENTRYPOINT":
            entrypoint = json.loads(value)
        elif instruction == "CMD":
            cmd = json.loads(value)
        else:
            raise AssertionError(f"the runner does not know {instruction} in the runtime stage")
    return Runtime(
        fs, entrypoint, cmd, healthcheck, timeout, exposed, user if os.geteuid() == 0 else None
    )


def _imported_from(fs: Filesystem, *modules: str) -> list[str]:
    """Where the image's Python imports ``modules`` from."""
    code = "; ".join(f"import {m}; print({m}.__file__)" for m in modules)
    return subprocess.run(
        ["python", "-c", code],
        env=fs.env,
        cwd=fs.host(fs.workdir),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


def _tail(log: Path) -> str:
    return log.read_text()[-3000:]


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A scratch directory every uid can traverse (the image's user is not root)."""
    path = Path(tempfile.mkdtemp(prefix="errand-image-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def build_image(scratch: Path) -> Runtime:
    """Run the Dockerfile's build and runtime stages; what ``docker run`` needs."""
    stages = read_stages(ROOT / "Dockerfile")
    build, runtime = stages[0], stages[-1]
    assert build.base == runtime.base == f"python:{sys.version_info[0]}.{sys.version_info[1]}-slim"
    context = scratch / "context"
    build_context(ROOT, context)
    # The base image: a clean venv of this Python version; the system's interpreter when it has
    # one (under /usr, reachable by the image's unprivileged user, as /usr/local is in the image).
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    python = shutil.which(version, path="/usr/local/bin:/usr/bin") or sys.executable
    base = scratch / "python-slim"
    subprocess.run([python, "-m", "venv", str(base)], check=True)
    base_env = {
        "PATH": f"{base}/bin:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(scratch / "home"),
    }
    # The host's package-index settings, as a build's network would reach the index.
    base_env |= {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    if not FULL_INSTALL:
        # The runtime dependencies come from this test's environment (see FULL_INSTALL).
        base_env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]
    root = scratch / "root"
    build_fs = Filesystem(root, dict(base_env))
    run_build_stage(build, build_fs, context)
    # The runtime stage gets a fresh "/" at the same host path (see the module docstring).
    built = Filesystem(root.rename(scratch / "build-root"), build_fs.env, build_fs.workdir)
    root.mkdir()
    root.chmod(0o755)
    runtime_fs = Filesystem(root, dict(base_env))
    return run_runtime_stage(runtime, runtime_fs, {build.name or "0": built})


async def _probe(image: Runtime, env: dict[str, str], port: int) -> int:
    """Run the HEALTHCHECK command once (its port as published); its exit code."""
    image_port = image.fs.env["ERRAND_HEALTH_PORT"]
    argv = [a.replace(f":{image_port}/", f":{port}/") for a in image.healthcheck]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env=env,
        cwd=image.fs.host(image.fs.workdir),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        **_as_user(image),
    )
    try:
        return await asyncio.wait_for(proc.wait(), image.health_timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return -1


def _as_user(image: Runtime) -> dict[str, Any]:
    if image.uid_gid is None:
        return {}
    uid, gid = image.uid_gid
    return {"user": uid, "group": gid, "extra_groups": []}


@asynccontextmanager
async def container(image: Runtime, env: dict[str, str], log: Path) -> AsyncIterator[Any]:
    """``docker run`` of the image's default command: ENTRYPOINT + CMD, as its user."""
    argv = image.entrypoint + image.cmd
    with log.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            cwd=image.fs.host(image.fs.workdir),
            stdout=sink,
            stderr=sink,
            **_as_user(image),
        )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)


async def test_the_image_builds_from_its_context_and_its_default_command_becomes_healthy(
    scratch: Path, emu: Emulator, world: World, db_dsn: str
) -> None:
    """The Dockerfile, run stage by stage: the wheel builds from exactly the files the build
    context holds and installs with its dependencies; the runtime stage holds the venv and
    nothing of the source tree; ``errand run`` (ENTRYPOINT + CMD) with the image's ENV, as its
    unprivileged user, against a database and the emulator, until the HEALTHCHECK command
    passes; then SIGTERM stops it cleanly."""
    started = time.monotonic()
    image = await asyncio.to_thread(build_image, scratch)
    fs = image.fs
    assert sorted(p.name for p in fs.root.iterdir()) == ["data", "opt"]  # no /src, no /wheels
    site = next((fs.root / "opt/errand/lib").glob("python*/site-packages"))
    assert (site / "bot/_examples/commands.toml").is_file()  # the sandbox's catalog shipped
    assert (site / "jobs/_migrations").is_dir()
    image_port = fs.env["ERRAND_HEALTH_PORT"]
    assert image.exposed == [image_port]
    assert f"http://127.0.0.1:{image_port}/readyz" in image.healthcheck[-1]
    assert shutil.which(image.entrypoint[0], path=fs.env["PATH"]) == str(
        fs.host("/opt/errand/bin/errand")
    )

    where = _imported_from(fs, "bot", "jobs")
    assert all(w.startswith(f"{site}/") for w in where), where  # the wheel, not the checkout

    assert emu.application is not None
    port = free_port()
    env = fs.env | {  # what `docker run -e ...` (or compose) adds
        "DATABASE_URL": db_dsn,
        "DISCORD_TOKEN": emu.application.token,
        "ERRAND_DISCORD_API_BASE": emu.api_base,
        "ERRAND_DISCORD_GATEWAY_URL": emu.gateway_url,
        "ERRAND_BOT_GUILD_READY_TIMEOUT": "0.05",
        "ERRAND_HEALTH_PORT": str(port),
        "HOME": str(fs.host("/data")),
    }
    log = Path(tempfile.mkdtemp(prefix="errand-image-log-")) / "container.log"
    # A container reaches its database over the network (the tests' server has a socket only).
    relay = Relay(db_dsn)
    await relay.restore()
    try:
        env["DATABASE_URL"] = relay.dsn
        await _serve_the_image(image, env, port, log)
    finally:
        await relay.cut()
    lines = log.read_text().splitlines()
    assert all(line.startswith("{") for line in lines)  # ERRAND_LOG_FORMAT=json
    print(f"image built and healthy in {time.monotonic() - started:.1f} s")


async def _serve_the_image(image: Runtime, env: dict[str, str], port: int, log: Path) -> None:
    """The default container until its HEALTHCHECK passes; then SIGTERM, exit code 0."""
    async with container(image, env, log) as proc:
        deadline = time.monotonic() + 60
        while await _probe(image, env, port) != 0:
            assert proc.returncode is None, _tail(log)
            assert time.monotonic() < deadline, _tail(log)
            await asyncio.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0, _tail(log)
