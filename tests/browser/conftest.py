"""Fixtures for browser tests: the real ``errand sandbox`` in a subprocess, and Debian's Chromium
driven by Playwright (sync API; these tests are plain sync tests, so no event loop is running).

Chromium is ``/usr/bin/chromium`` (``ERRAND_TEST_CHROMIUM`` overrides it); Playwright's own
browser download is never used. Screenshots go to the test's temporary directory, or to
``ERRAND_SCREENSHOT_DIR`` when set (how ``docs/img/`` is refreshed).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.ports import free_port

CHROMIUM = Path(os.environ.get("ERRAND_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Settings that would point the sandbox at a shared database or a real Discord.
SCRUBBED_ENV = ("DATABASE_URL", "ERRAND_DB_URL", "TEST_DATABASE_URL", "DISCORD_TOKEN")


def errand_command() -> list[str]:
    """The installed ``errand`` script next to this interpreter (else on PATH)."""
    script = Path(sys.executable).parent / "errand"
    if script.exists():
        return [str(script)]
    found = shutil.which("errand")
    if found is None:
        pytest.fail("the errand console script is not installed (pip install -e .)")
    return [found]


class Sandbox:
    """``errand sandbox`` on a free port with its own data directory; restartable."""

    def __init__(
        self, data_dir: Path, port: int, log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.data_dir = data_dir
        self.port = port
        self.log_path = log_path
        self.env = env or {}
        self.url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
        env["ERRAND_LOG_LEVEL"] = "info"
        env.update(self.env)
        # A restarted sandbox appends to the same log, whose first banner names the same URL:
        # only this start's own output counts.
        since = len(self.log())
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                *errand_command(),
                "sandbox",
                "--data-dir",
                str(self.data_dir),
                "--port",
                str(self.port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        log.close()
        deadline = time.monotonic() + timeout
        banner = f"open {self.url}/"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"errand sandbox exited early:\n{self.log()}")
            if banner in self.log()[since:]:
                return
            time.sleep(0.1)
        pytest.fail(f"errand sandbox did not start within {timeout}s:\n{self.log()}")

    def stop(self, timeout: float = 30.0) -> int:
        """Ctrl-C, as a user would; returns the exit code."""
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"errand sandbox did not stop within {timeout}s:\n{self.log()}")
        self.process = None
        return code

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@contextmanager
def running_sandbox(
    tmp_path: Path, data_root: Path, env: dict[str, str] | None = None
) -> Iterator[Sandbox]:
    """A started sandbox (extra ``env`` for its process), stopped at the end of the block."""
    box = Sandbox(data_root / "data", free_port(), tmp_path / "sandbox.log", env=env)
    box.start()
    try:
        yield box
    finally:
        if box.process is not None:
            box.stop()


# The test kinds (``effect_probe`` does one blind effect), and a short shutdown grace: a restart
# stops a job held in its blind effect, which will not end on its own, so the grace (3 s in a
# sandbox) only delays the stop that makes it unknown.
PROBE_ENV = {
    "ERRAND_EXTRA_KINDS": "tests.support.kinds",
    "ERRAND_WORKER_SHUTDOWN_GRACE_SECONDS": "0.5",
}


@pytest.fixture
def sandbox(tmp_path: Path, data_root: Path) -> Iterator[Sandbox]:
    with running_sandbox(tmp_path, data_root) as box:
        yield box


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    target = Path(os.environ.get("ERRAND_SCREENSHOT_DIR") or tmp_path / "screenshots")
    target.mkdir(parents=True, exist_ok=True)
    return target


@pytest.fixture
def browser_page() -> Iterator[object]:
    if not CHROMIUM.exists():
        message = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)  # .ci/run installs it: a skip there would hide a broken CI
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            context = browser.new_context(viewport={"width": 1180, "height": 680})
            yield context.new_page()
            context.close()
        finally:
            browser.close()
