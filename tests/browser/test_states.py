"""Every state a job can be in, as the page shows it (these are the screenshots in
docs/img/state-*.png): queued behind a busy worker, running with progress, succeeded, failed,
cancelled, and unknown after a stop in the middle of a blind effect."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from .conftest import PROBE_ENV, Sandbox, running_sandbox
from .test_sandbox import RUNNING, WAIT_MS, open_page, open_thread, summon


@pytest.fixture
def one_at_a_time(tmp_path: Path, data_root: Path) -> Iterator[Sandbox]:
    """A sandbox whose worker runs one job at a time (so a second one waits, queued), with the
    test kinds loaded (``effect_probe``)."""
    with running_sandbox(
        tmp_path, data_root, {**PROBE_ENV, "ERRAND_WORKER_CONCURRENCY": "1"}
    ) as box:
        yield box


def shoot(page: Page, progress: Locator, path: Path) -> None:
    # No need to wait for an edit's highlight (a 1.2 s CSS animation) to fade: with animations
    # disabled, Playwright finishes finite animations before the screenshot, so it shows the
    # faded message.
    progress.scroll_into_view_if_needed()
    page.screenshot(path=str(path), animations="disabled")


def test_every_state_as_the_page_shows_it(
    one_at_a_time: Sandbox, browser_page: Page, screenshots: Path, tmp_path: Path
) -> None:
    sandbox, page = one_at_a_time, browser_page
    open_page(page, sandbox)

    long_id, long_answer = summon(page, "/summon task:count slowly to sixty params:steps=60")
    waiting_id, waiting_answer = summon(page, "/summon task:count to three params:steps=3")
    _, waiting = open_thread(page, waiting_answer, waiting_id)
    expect(waiting).to_contain_text("queued", timeout=WAIT_MS)
    expect(waiting).to_contain_text("Waiting for a worker")
    expect(waiting.locator("button", has_text="Cancel")).to_have_count(1)
    shoot(page, waiting, screenshots / "state-queued.png")

    _, running = open_thread(page, long_answer, long_id)
    expect(running).to_contain_text("running", timeout=WAIT_MS)
    expect(running).to_contain_text(re.compile(r"Step ([3-9]|\d\d) of 60"), timeout=WAIT_MS)
    expect(running.locator(f"svg.icon[aria-label='{RUNNING}']")).to_have_count(1)
    # Under the answer, the thread's newest message: the bot's progress message.
    expect(long_answer.locator(".thread-preview")).to_contain_text("running", timeout=WAIT_MS)
    expect(long_answer.locator(".content")).to_contain_text("is running", timeout=WAIT_MS)
    shoot(page, running, screenshots / "state-running.png")

    running.locator("button", has_text="Cancel").click()
    expect(running).to_contain_text("cancelled", timeout=WAIT_MS)
    expect(running.locator("button", has_text="Cancel")).to_have_count(0)
    expect(long_answer.locator(".content")).to_contain_text("was cancelled", timeout=WAIT_MS)
    shoot(page, running, screenshots / "state-cancelled.png")

    _, waiting = open_thread(page, waiting_answer, waiting_id)
    expect(waiting).to_contain_text("succeeded", timeout=WAIT_MS)
    expect(waiting).to_contain_text('Result: {"attempt": 1, "steps": 3}')
    shoot(page, waiting, screenshots / "state-succeeded.png")

    failing_id, failing_answer = summon(
        page, "/summon task:give up half way params:steps=4 fail_at_step=2 step_seconds=0.5"
    )
    _, failing = open_thread(page, failing_answer, failing_id)
    expect(failing).to_contain_text("failed", timeout=WAIT_MS)
    expect(failing).to_contain_text("failed at step 2 as asked")
    shoot(page, failing, screenshots / "state-failed.png")

    ledger = tmp_path / "ledger.txt"
    blind_id, blind_answer = summon(
        page, f"/summon task:charge a card kind:effect_probe params:ledger={ledger} hold_seconds=60"
    )
    _, blind = open_thread(page, blind_answer, blind_id)
    expect(blind).to_contain_text("running", timeout=WAIT_MS)
    for _ in range(100):
        if ledger.exists():
            break
        page.wait_for_timeout(100)
    assert sandbox.stop() == 0, sandbox.log()
    sandbox.start()
    expect(blind).to_contain_text("unknown", timeout=WAIT_MS)
    # Under the answer, the bot's notice (its answer keeps its last live state after a restart).
    expect(blind_answer.locator(".thread-preview")).to_contain_text("unknown", timeout=WAIT_MS)
    shoot(page, blind, screenshots / "state-unknown.png")
