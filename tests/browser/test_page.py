"""The sandbox page as a person meets it, in Debian's Chromium: markdown as Discord renders it,
live relative times, a layout without overlaps at phone and laptop widths, an operator settling
an ``unknown`` job, the composer refusing an over-long task before sending it and keeping a line
typed while the previous one is sent, dismissable ephemeral answers, a job's timeline, and the
open thread kept across a reload."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from .conftest import PROBE_ENV, Sandbox, running_sandbox
from .test_sandbox import RUNNING, SUCCEEDED, WAIT_MS, open_page, open_thread, states_of, summon

# Every visible element that takes part in the layout; pairs that are not nested must not
# overlap (each box clipped to the scroll containers it is drawn in).
LAYOUT = ", ".join(
    [
        "#sidebar",
        ".pane:not([hidden])",
        ".pane-head",
        ".pane-head > *",
        ".messages",
        ".composer",
        ".composer-input",
        ".composer-error",
        "li.message",
        ".message .used",
        ".message .avatar",
        ".message .head",
        ".message .content",
        ".message .embed",
        ".message .row button",
        ".message .thread-link",
        ".message .thread-preview",
        ".message .ephemeral-note",
        "#offline",
        "#me > *",
        "#channels a",
    ]
)

OVERLAPS_JS = (Path(__file__).parent / "overlaps.js").read_text()


def overlaps(page: Page) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(OVERLAPS_JS, LAYOUT)
    return result


def history(sandbox: Sandbox, channel_id: str) -> list[dict[str, Any]]:
    url = f"{sandbox.url}/_emulator/channels/{channel_id}/history"
    with urllib.request.urlopen(url, timeout=10) as resp:
        found: list[dict[str, Any]] = json.load(resp)
        return found


def main_channel_id(page: Page) -> str:
    return str(page.evaluate("page.panes.main.channelId"))


def test_markdown_icons_live_times_and_the_answers_state(
    sandbox: Sandbox, browser_page: Page, screenshots: Path
) -> None:
    """Escaped markdown shows its characters, not its backslashes (the bot escapes the task);
    state icons are drawn without an emoji font; "… ago" times advance on their own; the
    channel answer shows how the job is doing; the page has a favicon."""
    page = browser_page
    open_page(page, sandbox)
    box = page.locator("#main-pane .composer-input")
    box.fill(r"plain \*\*not bold\*\* and **bold** and \_not italic\_")
    box.press("Enter")
    said = page.locator("#main-pane li.message", has_text="plain")
    expect(said).to_have_count(1, timeout=WAIT_MS)
    content = said.locator(".content")
    expect(content).to_have_text("plain **not bold** and bold and _not italic_")
    expect(content.locator("b")).to_have_text("bold")
    expect(content.locator("i")).to_have_count(0)

    job_id, answer = summon(
        page, "/summon task:write **this** _plainly_ with `make` params:steps=3 step_seconds=2"
    )
    _, progress = open_thread(page, answer, job_id)
    expect(progress).to_contain_text("running", timeout=WAIT_MS)
    quote = progress.locator(".quote")
    # The bot escapes the task's backticks ("\`make\`"), which Discord shows as backticks
    # around plain text: no code span, no stray backslash (issue #32, item 3).
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 760})
        expect(quote).to_have_text("write **this** _plainly_ with `make`")
        expect(quote.locator("code")).to_have_count(0)
        assert "\\" not in quote.inner_text()
    page.set_viewport_size({"width": 1280, "height": 760})
    expect(progress.locator(f"svg.icon[aria-label='{RUNNING}']")).to_have_count(1)
    # Under the answer, the thread's newest message: the bot's progress, as it posts it.
    preview = answer.locator(".thread-preview")
    expect(preview).to_contain_text("running", timeout=WAIT_MS)
    expect(preview.locator(f"svg.icon[aria-label='{RUNNING}']")).to_have_count(1)

    started = progress.locator('time.ts[data-style="R"]').first
    first = started.inner_text()
    page.wait_for_timeout(2500)
    assert started.inner_text() != first, first

    expect(progress).to_contain_text("succeeded", timeout=WAIT_MS)
    expect(progress.locator(f"svg.icon[aria-label='{SUCCEEDED}']")).to_have_count(1)
    expect(answer.locator(".content")).to_contain_text("succeeded", timeout=WAIT_MS)
    # The newest message in the thread is now the notice of the end.
    expect(preview).to_contain_text("succeeded", timeout=WAIT_MS)
    expect(preview.locator(f"svg.icon[aria-label='{SUCCEEDED}']")).to_have_count(1)
    # No emoji is left to a font: every state icon is an inline drawing.
    assert not any(ch in progress.inner_text() for ch in "⏳▶🛑✅❌⛔❓")

    with urllib.request.urlopen(sandbox.url + "/favicon.ico", timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("image/svg+xml")


@pytest.mark.parametrize("width", [420, 1000])
def test_nothing_overlaps_at_phone_and_laptop_widths(
    sandbox: Sandbox, browser_page: Page, screenshots: Path, width: int
) -> None:
    """With a finished job, a cancelled one and an ephemeral answer on screen, no element
    overlaps another, with the thread closed and open."""
    page = browser_page
    page.set_viewport_size({"width": width, "height": 760})
    open_page(page, sandbox)
    job_id, answer = summon(page, "/summon task:count to two params:steps=2 step_seconds=0.5")
    _, progress = open_thread(page, answer, job_id)
    expect(progress).to_contain_text("succeeded", timeout=WAIT_MS)
    box = page.locator("#thread-pane .composer-input")
    box.fill(f"/job status id:{job_id}")
    box.press("Enter")
    expect(page.locator("#thread-pane li.message.ephemeral")).to_have_count(1, timeout=WAIT_MS)
    page.wait_for_timeout(400)  # the flash of an edited message ends
    page.screenshot(path=str(screenshots / f"layout-{width}-thread.png"), animations="disabled")
    found = overlaps(page)
    assert found["checked"] > 20
    assert found["problems"] == [], found["problems"]

    page.locator("#thread-pane .close").click()
    expect(page.locator("#thread-pane")).to_be_hidden()
    expect(page.locator("#main-pane")).to_be_visible()
    page.wait_for_timeout(400)
    page.screenshot(path=str(screenshots / f"layout-{width}-channel.png"), animations="disabled")
    found = overlaps(page)
    assert found["checked"] > 10
    assert found["problems"] == [], found["problems"]
    if width <= 700:
        # The channel list is a drawer there; it opens over the channel, as on a phone.
        expect(page.locator("#sidebar")).to_be_hidden()
        page.locator("#main-pane .menu").click()
        expect(page.locator("#sidebar")).to_be_visible()


def test_a_too_long_task_is_refused_before_sending_and_kept(
    sandbox: Sandbox, browser_page: Page
) -> None:
    """A 5,000-character task is refused by the composer (the task option's limit, as Discord's
    client refuses it): nothing reaches the bot, and the text stays to be shortened."""
    page = browser_page
    open_page(page, sandbox)
    channel = main_channel_id(page)
    before = len(history(sandbox, channel))
    text = "/summon task:" + "x" * 5000
    box = page.locator("#main-pane .composer-input")
    box.fill(text)
    box.press("Enter")
    expect(page.locator("#main-pane .composer-error")).to_contain_text(
        "at most 1500 characters", timeout=WAIT_MS
    )
    expect(box).to_have_value(text)
    page.wait_for_timeout(1000)
    assert len(history(sandbox, channel)) == before


def test_a_blank_task_is_refused_before_sending_at_both_widths(
    sandbox: Sandbox, browser_page: Page
) -> None:
    """``/summon task:`` with nothing after it is refused by the composer, as Discord's
    client refuses an empty required option: nothing reaches the bot (it used to answer
    "Say what to do: /summon task:...."), at 1280 and 390 px (issue #32, item 10)."""
    page = browser_page
    open_page(page, sandbox)
    channel = main_channel_id(page)
    before = len(history(sandbox, channel))
    box = page.locator("#main-pane .composer-input")
    error = page.locator("#main-pane .composer-error")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 760})
        for text in ("/summon task:", "/summon task:   kind:demo"):
            box.fill(text)
            box.press("Enter")
            expect(error).to_have_text("/summon needs task:", timeout=WAIT_MS)
            expect(box).to_have_value(text)
    page.wait_for_timeout(1000)
    assert len(history(sandbox, channel)) == before


def test_ephemeral_answers_are_dismissed_and_do_not_outlive_a_reload(
    sandbox: Sandbox, browser_page: Page
) -> None:
    """An ephemeral answer shows "Dismiss message"; dismissed, it is gone; the header names the
    full command; after a reload earlier ephemeral answers are not shown again (Discord keeps
    them in the client only)."""
    page = browser_page
    open_page(page, sandbox)
    box = page.locator("#main-pane .composer-input")
    for _ in range(2):
        box.fill("/job list")
        box.press("Enter")
    answers = page.locator("#main-pane li.message.ephemeral")
    expect(answers).to_have_count(2, timeout=WAIT_MS)
    expect(answers.first.locator(".used")).to_contain_text("used /job list")
    answers.first.get_by_role("button", name="Dismiss message").click()
    expect(answers).to_have_count(1)
    page.reload()
    expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=WAIT_MS)
    page.wait_for_timeout(500)
    expect(page.locator("#main-pane li.message.ephemeral")).to_have_count(0)
    box.fill("/job status id:zzzzzzzz")
    box.press("Enter")
    expect(answers).to_have_count(1, timeout=WAIT_MS)
    expect(answers.first.locator(".used")).to_contain_text("used /job status")
    expect(answers.first).to_contain_text("No such job.")


def test_a_line_typed_while_the_previous_one_is_on_its_way_is_kept(
    sandbox: Sandbox, browser_page: Page
) -> None:
    """The composer clears the line it sent once the send is done, not the line typed since:
    the same command typed again while the first was on its way is sent too (CI saw the second
    of two quick /job list vanish unsent)."""
    page = browser_page
    open_page(page, sandbox)
    held: list[Route] = []

    def hold(route: Route) -> None:  # the first send waits until it is released
        held.append(route)

    page.route("**/_emulator/page/send", hold)
    box = page.locator("#main-pane .composer-input")
    box.fill("/job list")
    box.press("Enter")
    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(25)
    assert len(held) == 1
    box.fill("/job list")  # the person's next line, typed while the first is on its way
    held[0].continue_()
    page.unroute("**/_emulator/page/send")
    answers = page.locator("#main-pane li.message.ephemeral")
    expect(answers).to_have_count(1, timeout=WAIT_MS)
    expect(box).to_have_value("/job list")
    box.press("Enter")
    expect(answers).to_have_count(2, timeout=WAIT_MS)
    expect(box).to_have_value("")


def test_the_timeline_shows_every_event_of_a_job(
    sandbox: Sandbox, browser_page: Page, screenshots: Path
) -> None:
    """A click on a job id (in the answer, or in a /job status answer) opens the job's timeline:
    each event with who did it, what changed, when and why."""
    page = browser_page
    open_page(page, sandbox)
    job_id, answer = summon(page, "/summon task:a long count params:steps=60")
    thread_id, progress = open_thread(page, answer, job_id)
    expect(progress).to_contain_text("running", timeout=WAIT_MS)
    box = page.locator("#thread-pane .composer-input")
    box.fill(f"/job cancel id:{job_id} reason:changed my mind")
    box.press("Enter")
    expect(progress).to_contain_text("cancelled", timeout=WAIT_MS)
    assert states_of(sandbox, thread_id, job_id)[-1] == "cancelled"

    box.fill("/job status")
    box.press("Enter")
    status = page.locator("#thread-pane li.message.ephemeral", has_text="Last events")
    expect(status).to_have_count(1, timeout=WAIT_MS)
    status.locator(f"code.job-id[data-job='{job_id}']").first.click()
    dialog = page.locator("#timeline")
    expect(dialog).to_be_visible()
    rows = dialog.locator("tbody tr")
    expect(rows.first).to_be_visible(timeout=WAIT_MS)
    # The bot's own /job status lists the same events (the last six), one "• " line each.
    listed = [line for line in status.inner_text().splitlines() if line.startswith("•")]
    assert len(listed) == rows.count(), (listed, rows.all_inner_texts())
    texts = [
        (r.locator(".who").inner_text(), " ".join(r.locator(".what").inner_text().split()), r)
        for r in rows.all()
    ]
    whats = [t[1] for t in texts]
    assert whats == [
        "queued",
        "queued → running",
        "running → cancelling",
        "cancelling → cancelled",
    ], whats
    assert texts[0][0].startswith("alice")  # who submitted
    assert texts[2][0].startswith("alice")  # who cancelled, and why
    assert "changed my mind" in texts[2][2].locator(".why").inner_text()
    for _, _, row in texts:
        expect(row.locator(".when time")).to_have_count(1)
    page.screenshot(path=str(screenshots / "timeline.png"), animations="disabled")
    dialog.locator(".close").click()
    expect(dialog).to_be_hidden()

    # From the channel answer too.
    answer.locator(f"code.job-id[data-job='{job_id}']").first.click()
    expect(dialog.locator("tbody tr")).to_have_count(len(texts))


def test_reload_keeps_the_open_thread_and_the_newest_message_in_view(
    sandbox: Sandbox, browser_page: Page
) -> None:
    page = browser_page
    page.set_viewport_size({"width": 1180, "height": 420})
    open_page(page, sandbox)
    ids = []
    for n in range(4):
        job_id, answer = summon(page, f"/summon task:job {n} params:steps=1 step_seconds=0")
        ids.append(job_id)
    thread_id, _ = open_thread(page, answer, ids[-1])
    assert f"/threads/{thread_id}" in page.url

    def at_bottom(pane: str) -> bool:
        return bool(
            page.evaluate(
                f"(() => {{ const l = document.querySelector('#{pane} .messages');"
                " return l.scrollHeight - l.scrollTop - l.clientHeight < 2; })()"
            )
        )

    page.wait_for_timeout(500)
    assert at_bottom("main-pane")
    page.reload()
    expect(page.locator("body[data-ready=true]")).to_be_attached(timeout=WAIT_MS)
    expect(page.locator("#thread-pane")).to_be_visible()
    assert page.evaluate("page.panes.thread.channelId") == thread_id
    page.wait_for_timeout(500)
    assert at_bottom("main-pane")
    assert at_bottom("thread-pane")


@pytest.fixture
def probe_sandbox(tmp_path: Path, data_root: Path) -> Iterator[Sandbox]:
    """A sandbox that also runs the test kinds (``effect_probe`` does one blind effect)."""
    with running_sandbox(tmp_path, data_root, PROBE_ENV) as box:
        yield box


def test_the_operator_resolves_an_unknown_job(
    probe_sandbox: Sandbox, browser_page: Page, screenshots: Path, tmp_path: Path
) -> None:
    """A job whose effect was in flight when the sandbox stopped is ``unknown`` after the
    restart; alice is told an operator must check; the operator user resolves it from the page
    and the progress message shows the outcome."""
    sandbox = probe_sandbox
    page = browser_page
    open_page(page, sandbox)
    ledger = tmp_path / "ledger.txt"
    job_id, answer = summon(
        page,
        f"/summon task:charge once kind:effect_probe params:ledger={ledger} hold_seconds=120",
    )
    thread_id, progress = open_thread(page, answer, job_id)
    expect(progress).to_contain_text("running", timeout=WAIT_MS)
    for _ in range(100):
        if ledger.exists():
            break
        page.wait_for_timeout(100)
    assert sandbox.stop() == 0, sandbox.log()
    expect(page.locator("#offline")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#main-pane .composer-input")).to_be_disabled()
    page.screenshot(path=str(screenshots / "server-down.png"), animations="disabled")
    sandbox.start()
    expect(page.locator("#offline")).to_be_hidden(timeout=WAIT_MS)
    expect(progress).to_contain_text("unknown", timeout=WAIT_MS)
    expect(progress).to_contain_text("An operator has to check")
    expect(answer.locator(".thread-preview")).to_contain_text("unknown", timeout=WAIT_MS)
    page.screenshot(path=str(screenshots / "unknown-job.png"), animations="disabled")

    page.select_option("#viewer", label="operator")
    box = page.locator("#thread-pane .composer-input")
    box.fill(f"/job resolve id:{job_id} outcome:succeeded note:the ledger shows one charge")
    box.press("Enter")
    reply = page.locator("#thread-pane li.message.ephemeral", has_text="Resolved job")
    expect(reply).to_have_count(1, timeout=WAIT_MS)
    expect(reply).to_contain_text("now succeeded")
    expect(progress).to_contain_text("succeeded", timeout=WAIT_MS)
    assert states_of(sandbox, thread_id, job_id)[-2:] == ["unknown", "succeeded"]
    assert ledger.read_text().count(job_id) == 1


def test_option_fields_each_with_its_own_suggestions(
    sandbox: Sandbox, browser_page: Page, screenshots: Path
) -> None:
    """Choosing /summon opens one field per option (required first); the kind field suggests
    the bot's kinds, the params field that kind's parameters (never the previous field's
    suggestions); Enter sends the options as typed into the fields."""
    page = browser_page
    open_page(page, sandbox)
    box = page.locator("#main-pane .composer-input")
    box.fill("/summ")
    suggestions = page.locator("#main-pane .suggestions li")
    expect(suggestions.first).to_contain_text("/summon", timeout=WAIT_MS)
    box.press("Tab")
    fields = page.locator("#main-pane .option-field")
    expect(fields).to_have_count(6)
    expect(fields.locator(".option-name")).to_have_text(
        ["task", "kind", "params", "when", "timezone", "priority"]
    )
    expect(fields.first).to_have_class(re.compile("required"))

    page.locator("#main-pane input[data-option=task]").fill("count in fields")
    kind = page.locator("#main-pane input[data-option=kind]")
    kind.click()
    kind.press_sequentially("de")
    expect(suggestions.first).to_contain_text("demo", timeout=WAIT_MS)
    kind.press("Tab")
    expect(kind).to_have_value("demo")

    params = page.locator("#main-pane input[data-option=params]")
    params.click()
    params.press_sequentially("st")
    expect(suggestions).to_have_count(2, timeout=WAIT_MS)
    expect(suggestions).to_contain_text(["steps=", "step_seconds="])
    page.screenshot(path=str(screenshots / "option-fields.png"), animations="disabled")
    params.fill("steps=2 step_seconds=0.2")
    params.press("Enter")

    answers = page.locator("#main-pane li.message", has_text="Follow it in the thread")
    expect(answers).to_have_count(1, timeout=WAIT_MS)
    expect(answers.first).to_contain_text("(demo)")
    expect(page.locator("#main-pane .option-fields")).to_be_hidden()
    expect(box).to_have_value("")
    job_id = answers.first.locator("code").first.inner_text()
    _, progress = open_thread(page, answers.first, job_id)
    expect(progress).to_contain_text("succeeded", timeout=WAIT_MS)
    expect(progress).to_contain_text("2 steps")


def test_a_forum_lists_its_posts_and_a_summon_there_starts_one(
    sandbox: Sandbox, browser_page: Page
) -> None:
    page = browser_page
    open_page(page, sandbox)
    page.locator("#channels a", has_text="reports").click()
    expect(page.locator("#main-pane .pane-title")).to_contain_text("reports")
    expect(page.locator("#main-pane .messages")).to_contain_text("No posts yet")
    box = page.locator("#main-pane .composer-input")
    box.fill("/summon task:a forum job params:steps=1 step_seconds=0")
    box.press("Enter")
    post = page.locator("#main-pane li.forum-post button.thread-link", has_text="a forum job")
    expect(post).to_have_count(1, timeout=WAIT_MS)
    post.click()
    progress = page.locator("#thread-pane li.message", has_text="a forum job").first
    expect(progress).to_contain_text("succeeded", timeout=WAIT_MS)
