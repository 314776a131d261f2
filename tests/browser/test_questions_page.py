"""A job that talks back in ``errand sandbox``, in a real browser, as a newcomer tries it from
README.md: a ``demo`` question with buttons (refused for bob, answered by alice), one with a
select menu, one answered in words through the modal, and a follow-up typed with ``@Errand``
that the bot acknowledges with a reaction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import Sandbox, running_sandbox
from .test_sandbox import WAIT_MS, open_page, open_thread, summon


@pytest.fixture
def parking(tmp_path: Path, data_root: Path) -> Iterator[Sandbox]:
    """A sandbox whose worker parks a job as soon as it asks (30 s in a plain one)."""
    with running_sandbox(tmp_path, data_root, {"ERRAND_WORKER_PARK_AFTER_SECONDS": "0"}) as box:
        yield box


def test_questions_with_buttons_a_menu_and_a_modal_and_a_follow_up(
    parking: Sandbox, browser_page: Page, screenshots: Path
) -> None:
    page = browser_page
    open_page(page, parking)

    job_id, answer = summon(
        page,
        '/summon task:paint the shed params:steps=2 step_seconds=0 ask="Which colour?" '
        "choices=red,green",
    )
    _, progress = open_thread(page, answer, job_id)
    question = page.locator("#thread-pane li.message", has_text="asks:")
    expect(question).to_have_count(1, timeout=WAIT_MS)
    expect(question).to_contain_text("Which colour?")
    expect(progress).to_contain_text("waiting", timeout=WAIT_MS)  # parked: no worker holds it
    expect(progress).to_contain_text("Waiting for @alice: Which colour? · since")
    expect(progress.locator("svg.icon[aria-label=':pause_button:']")).to_have_count(1)
    page.screenshot(path=str(screenshots / "state-waiting.png"), animations="disabled")

    page.select_option("#viewer", label="bob")
    question.locator("button", has_text="green").click()
    refusal = page.locator("#thread-pane li.message.ephemeral")
    expect(refusal).to_contain_text("or an operator can answer", timeout=WAIT_MS)
    page.select_option("#viewer", label="alice")
    question.locator("button", has_text="green").click()
    expect(question).to_contain_text("Answered by", timeout=WAIT_MS)
    expect(question.locator("button")).to_have_count(0)
    expect(progress).to_contain_text("succeeded", timeout=WAIT_MS)
    expect(progress).to_contain_text("green")
    page.screenshot(path=str(screenshots / "question-answered.png"), animations="disabled")

    page.locator("#thread-pane .close").click()
    menu_id, menu_answer = summon(
        page,
        '/summon task:a rainbow params:steps=1 step_seconds=0 ask="Pick one" '
        "choices=red,orange,yellow,green,blue,indigo",
    )
    _, menu_progress = open_thread(page, menu_answer, menu_id)
    menu_question = page.locator("#thread-pane li.message", has_text="asks: Pick one")
    menu = menu_question.locator("select.menu")
    expect(menu).to_be_visible(timeout=WAIT_MS)
    menu.select_option(label="blue")
    expect(menu_question).to_contain_text("Answered by", timeout=WAIT_MS)
    expect(menu_progress).to_contain_text("succeeded", timeout=WAIT_MS)

    page.locator("#thread-pane .close").click()
    words_id, words_answer = summon(
        page, '/summon task:name it params:steps=1 step_seconds=5 ask="What name?"'
    )
    words_thread, words_progress = open_thread(page, words_answer, words_id)
    words_question = page.locator("#thread-pane li.message", has_text="asks: What name?")
    words_question.locator("button", has_text="Answer").click()
    modal = page.locator("#modal")
    expect(modal).to_be_visible(timeout=WAIT_MS)
    modal.locator("textarea").fill("Ada")
    page.screenshot(path=str(screenshots / "question-modal.png"), animations="disabled")
    modal.locator("button[type=submit]").click()
    expect(modal).to_be_hidden(timeout=WAIT_MS)
    expect(words_question).to_contain_text("Ada", timeout=WAIT_MS)

    box = page.locator("#thread-pane .composer-input")
    box.fill("@Errand make it bold")
    box.press("Enter")
    said = page.locator("#thread-pane li.message", has_text="make it bold")
    expect(said.locator(".reaction")).to_contain_text("📨", timeout=WAIT_MS)
    expect(words_progress).to_contain_text("succeeded", timeout=WAIT_MS)
    assert words_thread
