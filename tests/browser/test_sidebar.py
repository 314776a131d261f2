"""The sandbox's sidebar after a session of jobs (issue #32, items 18 and 6): each channel's
threads fold away under it, as Discord groups them, so channels and DMs stay in view; the fold
is the person's to open and close and outlives a reload; the open thread stays listed; the page
asks the browser for dark scrollbars and controls (``color-scheme``). At 1280 and 390 px."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from .conftest import Sandbox
from .test_sandbox import WAIT_MS, open_page, open_thread, summon
from .test_states import HEIGHT, OVERLAPS_JS, WIDTHS, WORDCUTS_JS, check_layout

JOBS = 6
DRAWER = "#sidebar, #guild-name, #channels a, #channels .threads-toggle, #me > *"


def in_view(page: Page, selector: str) -> bool:
    """Whether the element is inside the sidebar's visible part (no scrolling needed)."""
    return bool(
        page.evaluate(
            """(selector) => {
                const list = document.querySelector("#channels").getBoundingClientRect();
                const box = document.querySelector(selector).getBoundingClientRect();
                return box.height > 0 && box.top >= list.top && box.bottom <= list.bottom;
            }""",
            selector,
        )
    )


@pytest.mark.slow
def test_threads_fold_under_their_channel_and_the_dms_stay_in_view(
    sandbox: Sandbox, browser_page: Page, screenshots: Path
) -> None:
    page = browser_page
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    open_page(page, sandbox)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        assert page.evaluate("getComputedStyle(document.documentElement).colorScheme") == "dark"
        assert "rgb(26, 27, 30)" in page.evaluate(
            "getComputedStyle(document.documentElement).scrollbarColor"
        )
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    answers = [summon(page, f"/summon task:job {n} params:steps=0") for n in range(JOBS)]

    toggle = page.locator("#channels .threads-toggle").first
    expect(toggle).to_have_text(f"▸ {JOBS} threads", timeout=WAIT_MS)
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#channels li.thread")).to_have_count(0)
    assert in_view(page, "#channels a[data-kind=dm]")
    check_layout(page, "folded, 1280 px")
    page.screenshot(path=str(screenshots / "sidebar-folded.png"), animations="disabled")

    toggle.click()
    expect(toggle).to_have_text(f"▾ {JOBS} threads")
    expect(page.locator("#channels li.thread")).to_have_count(JOBS)
    check_layout(page, "open, 1280 px")
    page.screenshot(path=str(screenshots / "sidebar-open.png"), animations="disabled")
    page.reload()  # the person's choice is kept
    expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=WAIT_MS)
    expect(page.locator("#channels li.thread")).to_have_count(JOBS)

    page.locator("#channels .threads-toggle").first.click()
    expect(page.locator("#channels li.thread")).to_have_count(0)
    job_id, answer = answers[2]
    open_thread(page, answer, job_id)
    open_one = page.locator("#channels li.thread")
    expect(open_one).to_have_count(1)  # folded, the open thread is still listed
    expect(open_one).to_contain_text(job_id)
    expect(open_one.locator("a")).to_have_class("active")

    page.locator("#thread-pane .close").click()
    page.set_viewport_size({"width": WIDTHS[1], "height": HEIGHT})
    page.locator("#main-pane .menu").click()
    expect(page.locator("#sidebar")).to_be_visible()
    assert in_view(page, "#channels a[data-kind=dm]")
    boxes: dict[str, Any] = page.evaluate(OVERLAPS_JS, DRAWER)
    assert boxes["problems"] == [], boxes["problems"]
    assert page.evaluate(WORDCUTS_JS, "#sidebar")["cuts"] == []
    page.screenshot(path=str(screenshots / "phone-sidebar.png"), animations="disabled")
