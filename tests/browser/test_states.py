"""Every state a job can be in, as the page shows it, at a laptop's 1280 px and a phone's 390 px
(the screenshots in docs/img/state-*.png): queued behind a busy worker, running with progress,
cancelled, succeeded, failed, unknown after a stop in the middle of an outside action, and
resolved by an operator; each width checked for overlapping boxes and for words cut across two
lines, and the timeline at both widths too.

A new state is one line: a ``(state, how to reach it)`` row in :data:`LIVE` (a ``/summon`` and
the state to wait for, or a person's action on the page); ``test_every_state_has_its_row``
fails, naming it, until the state has one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from jobs.engine.state import State

from .conftest import PROBE_ENV, Sandbox, running_sandbox
from .test_page import LAYOUT, OVERLAPS_JS
from .test_sandbox import RUNNING, WAIT_MS, open_page, open_thread, summon

WIDTHS = (1280, 390)
HEIGHT = 800
WORDCUTS_JS = (Path(__file__).parent / "wordcuts.js").read_text()
# The timeline dialog, open over the page (whose boxes it covers: checked on their own).
DIALOG = "#timeline[open] header > *, #timeline[open] .task, #timeline[open] td"
NOT_SHOWN = {
    State.CANCELLING.value: "a moment between Cancel and cancelled: no screenshot can hold it",
}
"""States a job passes through without a screenshot, each with its reason."""


def check_layout(page: Page, what: str, *, dialog: bool = False) -> None:
    """No two boxes overlap, nothing leaves the window, no word is cut across two lines: on
    the page, or in the open ``dialog``."""
    boxes: dict[str, Any] = page.evaluate(OVERLAPS_JS, DIALOG if dialog else LAYOUT)
    assert boxes["checked"] > 10, what
    assert boxes["problems"] == [], f"{what}: {boxes['problems']}"
    words: dict[str, Any] = page.evaluate(WORDCUTS_JS, "#timeline[open]" if dialog else "#app")
    assert words["words"] > 20, what
    assert words["cuts"] == [], f"{what}: {words['cuts']}"


@dataclass
class Flow:
    """A person at the page: the jobs they made, and the screenshots taken of them."""

    page: Page
    sandbox: Sandbox
    screenshots: Path
    jobs: dict[str, tuple[str, Locator]] = field(default_factory=dict)
    shot: list[str] = field(default_factory=list)

    def wide(self) -> None:
        """Back at 1280 px, where the channel, the thread and the sidebar are side by side."""
        self.page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})

    def summon(self, name: str, text: str) -> None:
        """Type a /summon in #general; the job is known as ``name`` from then on."""
        self.wide()
        self.jobs[name] = summon(self.page, text)

    def thread(self, name: str, state: str) -> Locator:
        """Open the job's thread; its progress message once it shows ``state``."""
        self.wide()
        job_id, answer = self.jobs[name]
        _, progress = open_thread(self.page, answer, job_id)
        expect(progress).to_contain_text(f"{state}", timeout=WAIT_MS)
        return progress

    def new(self, text: str, state: str) -> Locator:
        """A new job (``/summon text``), once its progress message shows ``state``."""
        name = f"job {len(self.jobs) + 1}"
        self.summon(name, text)
        return self.thread(name, state)

    def cancel(self, name: str) -> Locator:
        """Press Cancel on the job's progress message, as its requester."""
        progress = self.thread(name, "running")
        progress.locator("button", has_text="Cancel").click()
        expect(progress).to_contain_text("cancelled", timeout=WAIT_MS)
        expect(progress.locator("button", has_text="Cancel")).to_have_count(0)
        return progress

    def take(self, state: str, progress: Locator) -> None:
        """The state as the page shows it, at each width: checked, then a screenshot (the
        1280 px one is docs/img's)."""
        for width in WIDTHS:
            self.page.set_viewport_size({"width": width, "height": HEIGHT})
            progress.scroll_into_view_if_needed()
            expect(progress).to_contain_text(state if state != "resolved" else "succeeded")
            check_layout(self.page, f"{state} at {width} px")
            name = f"state-{state}.png" if width == WIDTHS[0] else f"phone-state-{state}.png"
            self.page.screenshot(path=str(self.screenshots / name), animations="disabled")
        self.shot.append(state)


Reach = Callable[[Flow], Locator]
FAIL = "steps=4 fail_at_step=2 step_seconds=0.5"
SEND = "steps=1 step_seconds=0 effect_seconds=60"
ASK = "steps=1 step_seconds=0 ask=colour? choices=red,green"

# One worker slot: "slow" runs while "second" waits, queued, behind it.
LIVE: list[tuple[str, Reach]] = [
    ("queued", lambda f: f.thread("second", "Waiting for a worker")),
    ("running", lambda f: f.thread("slow", "running")),
    ("cancelled", lambda f: f.cancel("slow")),
    ("succeeded", lambda f: f.thread("second", "succeeded")),
    ("failed", lambda f: f.new(f"/summon task:give up half way params:{FAIL}", "failed")),
    # Its progress message once parked, not the note "waiting for an answer" it has as it asks.
    ("waiting", lambda f: f.new(f"/summon task:paint the shed params:{ASK}", "Waiting for @")),
]
"""The states a job reaches while the sandbox runs, in the order one session reaches them."""

AFTER_RESTART = ("unknown", "resolved")
"""Reached across a restart (test_unknown_and_resolved_across_a_restart)."""


def test_every_state_has_its_row() -> None:
    """Each state of the transition table has a screenshot, or a reason in NOT_SHOWN."""
    shot = {state for state, _ in LIVE} | set(AFTER_RESTART)
    missing = {s.value for s in State} - shot - set(NOT_SHOWN)
    assert not missing, f"add a row to LIVE for: {sorted(missing)}"


@pytest.fixture
def one_at_a_time(tmp_path: Path, data_root: Path) -> Iterator[Sandbox]:
    """A sandbox whose worker runs one job at a time, so a second one waits, queued."""
    # A question parks its job at once, so the waiting state needs no 30 s wait.
    env = {"ERRAND_WORKER_CONCURRENCY": "1", "ERRAND_WORKER_PARK_AFTER_SECONDS": "0"}
    with running_sandbox(tmp_path, data_root, env) as box:
        yield box


@pytest.mark.slow
def test_the_live_states_at_both_widths(
    one_at_a_time: Sandbox, browser_page: Page, screenshots: Path
) -> None:
    page = browser_page
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    open_page(page, one_at_a_time)
    flow = Flow(page, one_at_a_time, screenshots)
    flow.summon("slow", "/summon task:count slowly to sixty params:steps=60")
    flow.summon("second", "/summon task:count to three params:steps=3")
    for state, reach in LIVE:
        progress = reach(flow)
        if state == "running":
            expect(progress).to_contain_text(re.compile(r"Step ([3-9]|\d\d) of 60"))
            expect(progress.locator(f"svg.icon[aria-label='{RUNNING}']")).to_have_count(1)
        flow.take(state, progress)
    assert flow.shot == [state for state, _ in LIVE]
    # What the states say, beyond their names (issue #32, items 8 and 9).
    cancelled = flow.thread("slow", "cancelled")
    expect(cancelled).to_contain_text(re.compile(r"\d+ of 60 steps done"))
    expect(cancelled).not_to_contain_text("counting")
    expect(cancelled).to_contain_text(re.compile(r"Run time [\d.]+ s · wall time"))
    succeeded = flow.thread("second", "succeeded")
    expect(succeeded).to_contain_text('Result: {"attempt": 1, "steps": 3}')


@pytest.fixture
def restartable(tmp_path: Path, data_root: Path) -> Iterator[Sandbox]:
    """A sandbox that stops quickly (a 0.5 s shutdown grace)."""
    with running_sandbox(tmp_path, data_root, PROBE_ENV) as box:
        yield box


@pytest.mark.slow
def test_unknown_and_resolved_across_a_restart(
    restartable: Sandbox, browser_page: Page, screenshots: Path
) -> None:
    """The newcomer's way to an ``unknown`` job (issue #32, item 1): a demo job's outside
    action (``effect_seconds``), the sandbox stopped with Ctrl-C while it runs and started
    again; then the operator resolves it, and its timeline shows who did what at both
    widths, no word cut (item 7)."""
    page, sandbox = browser_page, restartable
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    open_page(page, sandbox)
    flow = Flow(page, sandbox, screenshots)
    flow.summon("send", f"/summon task:send the report params:{SEND}")
    sending = flow.thread("send", "sending")
    assert sandbox.stop() == 0, sandbox.log()
    sandbox.start()
    expect(sending).to_contain_text("unknown", timeout=WAIT_MS)
    expect(sending).to_contain_text("An operator has to check what happened")
    flow.take("unknown", sending)

    flow.wide()
    page.select_option("#viewer", label="operator")
    box = page.locator("#thread-pane .composer-input")
    box.fill("/job resolve outcome:succeeded note:the report reached its inbox")
    box.press("Enter")
    expect(page.locator("#thread-pane li.message.ephemeral")).to_contain_text(
        "now succeeded", timeout=WAIT_MS
    )
    expect(sending).to_contain_text("succeeded", timeout=WAIT_MS)
    expect(sending).to_contain_text("Reason: resolved as succeeded: the report reached")
    notice = page.locator("#thread-pane li.message", has_text="resolved by")
    expect(notice).to_contain_text("resolved by @operator: the report reached its inbox")
    flow.take("resolved", sending)
    assert flow.shot == list(AFTER_RESTART)

    job_id = flow.jobs["send"][0]
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        sending.locator(f"code.job-id[data-job='{job_id}']").first.click()
        dialog = page.locator("#timeline")
        rows = dialog.locator("tbody tr")
        expect(rows.last).to_contain_text("succeeded", timeout=WAIT_MS)
        who = rows.last.locator(".who")
        expect(who).to_contain_text("operator")
        check_layout(page, f"the timeline at {width} px", dialog=True)
        name = "timeline.png" if width == WIDTHS[0] else "phone-timeline.png"
        page.screenshot(path=str(screenshots / name), animations="disabled")
        assert "discord:" not in dialog.inner_text()
        dialog.locator(".close").click()
        expect(dialog).to_be_hidden()
