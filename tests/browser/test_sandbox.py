"""``errand sandbox`` in a real browser: summon a job and watch its progress message edit in place
until it succeeds; cancel a long job (refused for another user, done for its requester); reload
the page, and restart the sandbox, and see the same history with jobs carried on."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from .conftest import Sandbox

WAIT_MS = 30_000
STATE = re.compile(r"\*\*(queued|running|cancelling|succeeded|failed|cancelled|unknown)\*\*")
# The page labels each emoji it draws with its name, as Discord's client does.
RUNNING, SUCCEEDED = ":arrow_forward:", ":white_check_mark:"


def open_page(page: Page, sandbox: Sandbox) -> None:
    page.goto(sandbox.url + "/")
    expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=WAIT_MS)


def summon(page: Page, text: str) -> tuple[str, Locator]:
    """Type a /summon in #general; returns the job id and the answer message."""
    answers = page.locator("#main-pane li.message", has_text="Follow it in the thread")
    before = answers.count()
    box = page.locator("#main-pane .composer-input")
    box.fill(text)
    box.press("Enter")
    expect(answers).to_have_count(before + 1, timeout=WAIT_MS)
    answer = answers.nth(before)
    return answer.locator("code").first.inner_text(), answer


def open_thread(page: Page, answer: Locator, job_id: str) -> tuple[str, Locator]:
    """Open the job's thread from the answer; returns the thread id and the progress message."""
    link = answer.locator("button.thread-link")
    expect(link).to_be_visible(timeout=WAIT_MS)
    thread_id = link.get_attribute("data-thread")
    assert thread_id
    link.click()
    progress = page.locator("#thread-pane li.message", has_text=job_id).first
    expect(progress).to_be_visible(timeout=WAIT_MS)
    return thread_id, progress


def states_of(sandbox: Sandbox, thread_id: str, job_id: str) -> list[str]:
    """The job states shown by every version of the thread's progress message, in order."""
    url = f"{sandbox.url}/_emulator/channels/{thread_id}/history"
    with urllib.request.urlopen(url, timeout=10) as resp:
        history: list[dict[str, Any]] = json.load(resp)
    progress = next(m for m in history if job_id in m["content"] and m["components"] is not None)
    states = []
    for version in progress["versions"]:
        found = STATE.search(version["content"])
        if found and (not states or states[-1] != found.group(1)):
            states.append(found.group(1))
    return states


def test_summon_watch_cancel_and_reload(
    sandbox: Sandbox, browser_page: Page, screenshots: Path
) -> None:
    """The composer completes commands; a summoned job's progress message edits in place until
    ``succeeded``; a long job's Cancel is refused for bob (an answer only bob sees) and works for
    alice (``cancelled``, never a later success); a reload shows the same history."""
    page = browser_page
    open_page(page, sandbox)
    page.screenshot(path=str(screenshots / "empty-channel.png"), animations="disabled")

    box = page.locator("#main-pane .composer-input")
    box.fill("/job st")
    suggestions = page.locator("#main-pane .suggestions li")
    expect(suggestions.first).to_contain_text("/job status", timeout=WAIT_MS)
    box.press("Tab")
    expect(box).to_have_value("/job status ")
    box.fill("")

    job_id, answer = summon(page, "/summon task:count to three params:steps=3 step_seconds=1")
    thread_id, progress = open_thread(page, answer, job_id)
    expect(progress).to_contain_text("succeeded", timeout=WAIT_MS)
    expect(progress.locator("button", has_text="Cancel")).to_have_count(0)
    # The answer in the channel says so too, and so does the thread's newest message under it.
    expect(answer.locator(".content")).to_contain_text("succeeded", timeout=WAIT_MS)
    expect(answer.locator(".thread-preview")).to_contain_text("succeeded", timeout=WAIT_MS)
    page.screenshot(path=str(screenshots / "finished-job.png"), animations="disabled")
    states = states_of(sandbox, thread_id, job_id)
    assert states[-1] == "succeeded"
    assert "running" in states
    assert int(progress.get_attribute("data-versions") or 0) >= 2

    long_id, long_answer = summon(page, "/summon task:a long count params:steps=60")
    long_thread, long_progress = open_thread(page, long_answer, long_id)
    expect(long_progress).to_contain_text("running", timeout=WAIT_MS)
    cancel = long_progress.locator("button", has_text="Cancel")

    page.select_option("#viewer", label="bob")
    expect(page.locator("#thread-pane .pane-title")).to_contain_text(long_id)
    cancel.click()
    refusal = page.locator("#thread-pane li.message.ephemeral")
    expect(refusal).to_have_count(1, timeout=WAIT_MS)
    expect(refusal).to_contain_text("Only you can see this")
    page.screenshot(path=str(screenshots / "refused-cancel.png"), animations="disabled")
    expect(long_progress).to_contain_text("running")

    page.select_option("#viewer", label="alice")
    expect(page.locator("#thread-pane li.message.ephemeral")).to_have_count(0, timeout=WAIT_MS)
    cancel.click()
    expect(long_progress).to_contain_text("cancelled", timeout=WAIT_MS)
    expect(long_answer.locator(".content")).to_contain_text("cancelled", timeout=WAIT_MS)
    expect(long_answer.locator(".thread-preview")).to_contain_text("cancelled", timeout=WAIT_MS)
    page.screenshot(path=str(screenshots / "cancelled-job.png"), animations="disabled")
    page.wait_for_timeout(1500)
    expect(long_progress).to_contain_text("cancelled")
    long_states = states_of(sandbox, long_thread, long_id)
    assert long_states[-1] == "cancelled"
    assert "succeeded" not in long_states

    page.reload()
    expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=WAIT_MS)
    answers = page.locator("#main-pane li.message", has_text="Follow it in the thread")
    expect(answers).to_have_count(2, timeout=WAIT_MS)
    # each /summon answer shows how its job ended, not only the thread
    expect(answers.first).to_contain_text("succeeded")
    expect(answers.nth(1)).to_contain_text("cancelled")
    _, progress = open_thread(page, answers.first, job_id)
    expect(progress).to_contain_text("succeeded")
    page.screenshot(path=str(screenshots / "after-reload.png"), animations="disabled")


def test_restart_keeps_history_and_finishes_jobs(
    sandbox: Sandbox, browser_page: Page, screenshots: Path
) -> None:
    """Ctrl-C stops the sandbox cleanly mid-job; started again on the same data directory, the
    page shows the same messages and the job finishes on its same progress message."""
    page = browser_page
    open_page(page, sandbox)
    job_id, answer = summon(page, "/summon task:survive a restart params:steps=4")
    thread_id, progress = open_thread(page, answer, job_id)
    expect(progress).to_contain_text("running", timeout=WAIT_MS)

    assert sandbox.stop() == 0, sandbox.log()
    sandbox.start()
    expect(page.locator("#live.on")).to_be_attached(timeout=WAIT_MS)
    expect(progress).to_contain_text("succeeded", timeout=WAIT_MS)
    page.reload()
    expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=WAIT_MS)
    answers = page.locator("#main-pane li.message", has_text="Follow it in the thread")
    expect(answers).to_have_count(1, timeout=WAIT_MS)
    _, progress = open_thread(page, answers.first, job_id)
    expect(progress).to_contain_text("succeeded")
    assert states_of(sandbox, thread_id, job_id)[-1] == "succeeded"
    page.screenshot(path=str(screenshots / "after-restart.png"), animations="disabled")
