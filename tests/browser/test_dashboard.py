"""The operators' dashboard in Debian's Chromium, at a laptop's 1280 px and a phone's 390 px,
against a real ``errand dashboard``, a real PostgreSQL and real ``errand worker`` processes
(issue 33's acceptance): the login is refused without the token; an action without its CSRF
token changes nothing; every page renders every job state without overlapping boxes or cut
words; the filters and the search return the rows the database holds; cancel, resolve, retry,
pause and a bulk cancel change the database and record an operator event naming the user; and a
job finishing on a worker shows on the open page within a second.

The jobs reach their states the way they do in production: ``demo`` jobs run, ask (and park),
fail and succeed on the workers; a ``swallower`` ignores its cancel (``cancelling``); a
``demo`` caught in an outside action by a SIGKILL of its worker is reaped ``unknown``.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from jobs.engine.state import Actor, State
from jobs.engine.store import JobStore, Submission
from tests.support.dashboard import TOKEN, Database, Running, start_dashboard, start_worker

from .test_page import OVERLAPS_JS
from .test_states import WORDCUTS_JS

WIDTHS = (1280, 390)
HEIGHT = 800
WAIT_MS = 30_000
USER = "ada lovelace"
LAYOUT = (
    "header .brand, header nav a, header .who, main h1, main h2, th, td, dt, dd, "
    ".actions > *, .pager > *, .filters label, #filters .states label"
)
SLOW = {
    "ERRAND_WORKER_CANCEL_GRACE_SECONDS": "600",  # a swallower stays cancelling
    "ERRAND_WORKER_PARK_AFTER_SECONDS": "0.3",  # a question parks the job: waiting
}


def origin(task: str, guild: str = "1") -> dict[str, Any]:
    return {"transport": "discord", "task": task, "guild_id": guild, "channel_id": "77"}


@dataclass
class Deployment:
    """The database, the workers and the dashboard of this module, with the jobs made in each
    state (``state -> public ids``)."""

    db: Database
    dashboard: Running
    workers: list[Running]
    data: Path
    jobs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard.port}"

    def submit(self, *subs: Submission) -> list[str]:
        async def go(store: JobStore) -> list[str]:
            return [public_id for public_id, _ in await store.submit_many(list(subs))]

        return self.db.store(go)

    def state_of(self, public_id: str) -> str:
        [row] = self.db.fetch("SELECT state::text FROM job WHERE public_id = $1", public_id)
        return str(row["state"])

    def wait_state(self, public_id: str, state: str, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.state_of(public_id) == state:
                return
            time.sleep(0.05)
        raise AssertionError(f"{public_id} is {self.state_of(public_id)}, not {state}")


def later(task: str, requester: str = "discord:10", guild: str = "1") -> Submission:
    """A queued job, due in an hour."""
    return Submission(
        "demo",
        {"steps": 1},
        requester,
        origin(task, guild),
        f"guild:{guild}",
        run_at=datetime.now(UTC) + timedelta(hours=1),
    )


@pytest.fixture(scope="module")
def deployment(
    server_dsn: str, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    data = tmp_path_factory.mktemp("dashboard")
    db = Database(server_dsn, template_db)
    started: list[Running] = []
    try:
        # Two jobs caught in an outside action by their worker's SIGKILL: reaped unknown.
        first = start_worker(db.dsn, data, "worker-0", **SLOW)
        started.append(first)
        run = Deployment(db, None, [], data)  # type: ignore[arg-type]
        unknown = run.submit(
            *[
                Submission(
                    "demo",
                    {"steps": 0, "effect_seconds": 600},
                    "discord:11",
                    origin(f"pay the invoice {n}"),
                    "guild:1",
                )
                for n in range(2)
            ]
        )
        for public_id in unknown:
            run.wait_state(public_id, "running")
        time.sleep(0.5)  # inside the effect
        first.stop(signal.SIGKILL)
        run.workers = [start_worker(db.dsn, data, f"worker-{n}", **SLOW) for n in (1, 2)]
        started += run.workers
        run.dashboard = start_dashboard(db.dsn, data)
        started.append(run.dashboard)
        for public_id in unknown:
            run.wait_state(public_id, "unknown")
        run.jobs["unknown"] = unknown
        run.jobs["queued"] = run.submit(later("write the weekly report"))
        [running, waiting, swallow] = run.submit(
            Submission("demo", {"steps": 1000, "step_seconds": 1}, "discord:12",
                       origin("count to a thousand", "2"), "guild:2"),
            Submission("demo", {"steps": 2, "ask": "Which colour?", "choices": ["red", "green"]},
                       "discord:12", origin("paint the shed", "2"), "guild:2"),
            Submission("swallower", {"seconds": 600}, "discord:13", origin("ignore the stop")),
        )  # fmt: skip
        run.jobs["running"], run.jobs["waiting"] = [running], [waiting]
        run.wait_state(swallow, "running")

        async def cancel(store: JobStore) -> None:
            await store.cancel(swallow, actor=Actor.REQUESTER, by="discord:13")

        run.db.store(cancel)
        run.jobs["cancelling"] = [swallow]
        run.jobs["succeeded"] = run.submit(
            Submission("demo", {"steps": 1, "step_seconds": 0}, "discord:14", origin("say hi"))
        )
        run.jobs["failed"] = run.submit(
            *[
                Submission(
                    "demo",
                    {"steps": 2, "step_seconds": 0, "fail_at_step": 1},
                    "discord:15",
                    origin(f"deploy release {n}"),
                    "guild:1",
                )
                for n in (1, 2)
            ]
        )
        [to_cancel] = run.submit(later("a job nobody wants"))

        async def cancel_queued(store: JobStore) -> None:
            await store.cancel(to_cancel, actor=Actor.REQUESTER, by="discord:10")

        run.db.store(cancel_queued)
        run.jobs["cancelled"] = [to_cancel]
        for state, ids in run.jobs.items():
            for public_id in ids:
                run.wait_state(public_id, state)
        yield run
    finally:
        for running_process in reversed(started):
            running_process.stop()
        db.drop()


def sign_in(page: Page, url: str, name: str = USER) -> None:
    page.goto(f"{url}/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    expect(page.locator("#user")).to_have_text(name)


def check_layout(page: Page, what: str) -> None:
    """No two boxes overlap, nothing leaves the window, no word is cut across two lines."""
    boxes: dict[str, Any] = page.evaluate(OVERLAPS_JS, LAYOUT)
    assert boxes["checked"] > 5, what
    assert boxes["problems"] == [], f"{what}: {boxes['problems']}"
    words: dict[str, Any] = page.evaluate(WORDCUTS_JS, "main")
    assert words["words"] > 10, what
    assert words["cuts"] == [], f"{what}: {words['cuts']}"


def rows(page: Page) -> list[str]:
    return sorted(page.locator("#jobs tbody tr[data-job]").evaluate_all(
        "rs => rs.map(r => r.dataset.job)"
    ))  # fmt: skip


def test_the_login_is_refused_without_the_token(deployment: Deployment, browser_page: Page) -> None:
    page = browser_page
    page.goto(f"{deployment.url}/jobs")
    expect(page).to_have_url(re.compile(r"/login\?next=/jobs$"))
    page.fill("input[name=name]", USER)
    page.fill("input[name=token]", "not the token")
    page.click("button[type=submit]")
    expect(page.locator("#why")).to_have_text("wrong token")
    assert page.context.cookies() == []
    page.goto(f"{deployment.url}/")
    expect(page).to_have_url(re.compile(r"/login"))
    sign_in(page, deployment.url)
    page.goto(f"{deployment.url}/jobs")
    expect(page.locator("h1")).to_have_text("Jobs")


def test_an_action_without_the_csrf_token_is_refused(
    deployment: Deployment, browser_page: Page
) -> None:
    page = browser_page
    sign_in(page, deployment.url)
    [job] = deployment.submit(later("keep me queued"))
    for form in ({}, {"csrf": "f" * 64}):
        answer = page.request.post(f"{deployment.url}/jobs/{job}/cancel", form=form)
        assert answer.status == 403
        assert "CSRF token is missing or wrong" in answer.text()
    assert deployment.state_of(job) == "queued"
    assert deployment.db.fetch("SELECT * FROM operator_action WHERE detail ? 'outcome'") == []


@pytest.mark.parametrize("width", WIDTHS)
def test_each_page_renders_each_job_state(
    deployment: Deployment, browser_page: Page, screenshots: Path, width: int
) -> None:
    page = browser_page
    page.set_viewport_size({"width": width, "height": HEIGHT})
    sign_in(page, deployment.url)
    page.goto(f"{deployment.url}/")
    # The two workers and the dashboard, and the row the SIGKILLed worker left (shown silent
    # once it misses three heartbeats, deleted by the next process to stop).
    expect(page.locator("#processes tbody tr")).to_have_count(4)
    expect(page.locator("#processes")).to_contain_text("dashboard")
    for state in ("queued", "running", "cancelling", "waiting", "unknown"):
        cell = page.locator(f"#kinds tr[data-kind=demo] td[data-state={state}], "
                            f"#kinds tr[data-kind=swallower] td[data-state={state}]")  # fmt: skip
        assert any(text not in ("", "0") for text in cell.all_inner_texts()), state
    check_layout(page, f"overview at {width}")
    page.screenshot(path=screenshots / f"dashboard-overview-{width}.png", full_page=True)
    page.goto(f"{deployment.url}/jobs")
    shown = dict(page.locator("#jobs tbody tr[data-job]").evaluate_all(
        "rs => rs.map(r => [r.dataset.job, r.dataset.state])"
    ))  # fmt: skip
    for state in State:
        for public_id in deployment.jobs[state.value]:
            if deployment.state_of(public_id) == state.value:
                assert shown.get(public_id) == state.value, (public_id, state)
    check_layout(page, f"job list at {width}")
    page.screenshot(path=screenshots / f"dashboard-jobs-{width}.png", full_page=True)
    for state in State:
        public_id = deployment.jobs[state.value][-1]
        page.goto(f"{deployment.url}/jobs/{public_id}")
        expect(page.locator("#state")).to_have_text(deployment.state_of(public_id))
        expect(page.locator("#timeline tbody tr").first).to_be_visible()
        check_layout(page, f"{state.value} job at {width}")
        page.screenshot(
            path=screenshots / f"dashboard-job-{state.value}-{width}.png", full_page=True
        )
    page.goto(f"{deployment.url}/kinds")
    check_layout(page, f"kinds at {width}")


def test_the_filters_and_the_search_return_the_right_rows(
    deployment: Deployment, browser_page: Page
) -> None:
    page = browser_page
    sign_in(page, deployment.url)
    db = deployment.db

    def ids(where: str, *args: Any) -> list[str]:
        return sorted(
            r["public_id"] for r in db.fetch(f"SELECT public_id FROM job WHERE {where}", *args)
        )

    page.goto(f"{deployment.url}/jobs")
    page.check("#filters input[name=state][value=failed]")
    page.check("#filters input[name=state][value=unknown]")
    page.click("#apply")
    assert rows(page) == ids("state IN ('failed', 'unknown')")
    page.goto(f"{deployment.url}/jobs")
    page.fill("#filters input[name=requester]", "discord:12")
    page.click("#apply")
    assert rows(page) == ids("requester = 'discord:12'")
    page.goto(f"{deployment.url}/jobs")
    page.fill("#filters input[name=guild]", "guild:2")
    page.fill("#filters input[name=kind]", "demo")
    page.click("#apply")
    assert rows(page) == ids("origin_group = 'guild:2' AND kind = 'demo'")
    page.goto(f"{deployment.url}/jobs")
    page.fill("#filters input[name=q]", "DEPLOY RELEASE")
    page.click("#apply")
    assert rows(page) == ids("origin->>'task' ILIKE '%deploy release%'")
    assert len(rows(page)) == 2
    page.goto(f"{deployment.url}/jobs")
    page.fill(
        "#filters input[name=since]",
        (datetime.now(UTC) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"),
    )
    page.click("#apply")
    assert rows(page) == []
    expect(page.locator("#jobs tbody")).to_contain_text("No job matches")
    page.goto(f"{deployment.url}/jobs")
    page.select_option("#filters select[name=order]", "oldest")
    page.click("#apply")
    oldest = page.locator("#jobs tbody tr[data-job]").first.get_attribute("data-job")
    [first] = db.fetch("SELECT public_id FROM job ORDER BY id LIMIT 1")
    assert oldest == first["public_id"]
    page.goto(f"{deployment.url}/jobs?state=nonsense")
    expect(page.locator("#why")).to_contain_text("state: one of")


def confirm(page: Page, url: str) -> None:
    page.goto(url)
    page.click("#confirm")
    expect(page.locator(".done")).to_be_visible()


def test_actions_change_the_database_and_record_an_operator_event_naming_the_user(
    deployment: Deployment, browser_page: Page
) -> None:
    page = browser_page
    sign_in(page, deployment.url)
    db = deployment.db
    url = deployment.url

    def event_by(public_id: str, to_state: str) -> list[Any]:
        return [
            r["by"]
            for r in db.fetch(
                "SELECT e.data->>'by' AS by FROM event e JOIN job j ON j.id = e.job_id WHERE"
                " j.public_id = $1 AND e.to_state = $2::job_state AND e.actor = 'operator'",
                public_id,
                to_state,
            )
        ]

    def actions(action: str) -> list[dict[str, Any]]:
        return db.fetch("SELECT by, kind, detail FROM operator_action WHERE action = $1", action)

    # Cancel a queued job.
    [job] = deployment.submit(later("cancel me"))
    confirm(page, f"{url}/jobs/{job}/cancel")
    assert deployment.state_of(job) == "cancelled"
    assert event_by(job, "cancelled") == [USER]
    assert [a["by"] for a in actions("cancel")] == [USER]
    # Resolve an unknown job, with a note.
    unknown = deployment.jobs["unknown"][0]
    page.goto(f"{url}/jobs/{unknown}/resolve")
    page.select_option("select[name=as]", "failed")
    page.fill("textarea[name=note]", "the invoice was not sent; checked the bank")
    page.click("#confirm")
    expect(page.locator("#state")).to_have_text("failed")
    assert deployment.state_of(unknown) == "failed"
    assert event_by(unknown, "failed") == [USER]
    assert [a["by"] for a in actions("resolve")] == [USER]
    # Retry a failed job: a new job, linked, its creation naming the operator.
    failed = deployment.jobs["failed"][0]
    confirm(page, f"{url}/jobs/{failed}/retry")
    [made] = db.fetch(
        "SELECT n.public_id FROM job n JOIN job o ON o.id = n.retry_of WHERE o.public_id = $1",
        failed,
    )
    expect(page).to_have_url(re.compile(f"/jobs/{made['public_id']}"))
    expect(page.locator("#facts a", has_text=failed)).to_be_visible()
    assert event_by(made["public_id"], "queued") == [USER]
    assert deployment.state_of(failed) == "failed"
    # Pause and resume a kind.
    confirm(page, f"{url}/kinds/noop/pause")
    assert db.fetch("SELECT paused_by FROM kind_setting WHERE kind = 'noop'") == [
        {"paused_by": USER}
    ]
    confirm(page, f"{url}/kinds/noop/resume")
    assert [(a["by"], a["kind"]) for a in actions("pause") + actions("resume")] == [
        (USER, "noop"),
        (USER, "noop"),
    ]
    # Bulk cancel by a filter: its count first.
    bulk = deployment.submit(*[later(f"bulk {n}", requester="discord:99") for n in range(3)])
    page.goto(f"{url}/jobs?requester=discord:99")
    page.click("#bulk-cancel")
    expect(page.locator("#count")).to_contain_text("This touches 3 job(s)")
    page.click("#confirm")
    expect(page.locator(".done")).to_have_text("cancelled 3 of 3 matching job(s)")
    assert {deployment.state_of(j) for j in bulk} == {"cancelled"}
    for public_id in bulk:
        assert event_by(public_id, "cancelled") == [USER]
    [record] = actions("bulk_cancel")
    assert record["by"] == USER
    assert record["detail"]["matched"] == 3


def test_a_job_finishing_elsewhere_updates_the_open_page_within_a_second(
    deployment: Deployment, browser_page: Page
) -> None:
    page = browser_page
    sign_in(page, deployment.url)
    [job] = deployment.submit(
        Submission("demo", {"steps": 3, "step_seconds": 1}, "discord:16", origin("count to 3"))
    )
    deployment.wait_state(job, "running")
    page.goto(f"{deployment.url}/jobs/{job}")
    expect(page.locator("#state")).to_have_text("running")
    page.wait_for_function("() => document.body.dataset.live === 'open'")
    page.wait_for_function(
        "() => document.getElementById('state').textContent === 'succeeded'",
        timeout=WAIT_MS,
        polling=20,
    )
    seen = time.time()
    [row] = deployment.db.fetch("SELECT finished_at FROM job WHERE public_id = $1", job)
    lag = seen - row["finished_at"].timestamp()
    print(f"the open page showed the job's end {lag * 1000:.0f} ms after it was written")
    assert lag < 1.0, f"the page showed the end {lag:.2f} s after it"
    # The list, too.
    page.goto(f"{deployment.url}/jobs?kind=demo")
    page.wait_for_function("() => document.body.dataset.live === 'open'")
    [other] = deployment.submit(
        Submission("demo", {"steps": 1, "step_seconds": 0}, "discord:16", origin("say bye"))
    )
    expect(page.locator(f'#jobs tr[data-job="{other}"]')).to_have_attribute(
        "data-state", "succeeded", timeout=WAIT_MS
    )
