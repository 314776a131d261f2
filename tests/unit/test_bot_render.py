"""What the bot shows, without Discord: every state's progress message, notices (a cancel's says
who cancelled and why in one sentence), the status page (an unknown job's says how to settle it)
and parameter parsing; and the bot's named SQL is complete."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot import question_text, render, status_page
from bot.commands.summon import summon_params
from bot.queries import bot_queries
from jobs.engine.notices import Notice
from jobs.engine.state import Actor, State
from jobs.engine.views import EventView, JobStatus, JobView

T0 = datetime(2026, 8, 20, 12, 0, tzinfo=UTC)


def job(state: State, **changes: Any) -> JobView:
    values: dict[str, Any] = dict(
        id=1,
        public_id="k7m2x9qa",
        kind="demo",
        params={},
        requester="discord:1",
        origin={"transport": "discord", "user_id": "42", "task": "count"},
        origin_group="9",
        state=state,
        reason=None,
        result=None,
        error=None,
        attempts=1,
        max_attempts=3,
        current_attempt_id=None,
        run_at=T0,
        deadline_at=None,
        cancel_requested_at=None,
        cancel_requested_by=None,
        cancel_reason=None,
        progress=None,
        usage={},
        created_at=T0,
        updated_at=T0,
        started_at=T0 + timedelta(seconds=1),
        finished_at=None,
    )
    values.update(changes)
    return JobView(**values)


def row(to: str, reason: str | None = None, actor: Actor = Actor.WORKER) -> Notice:
    """A notice of the transition to ``to``, as the event recorded it."""
    return Notice(
        id=7,
        job_id=1,
        from_state=State.RUNNING,
        to_state=State(to),
        actor=actor,
        reason=reason,
        at=T0,
        attempts=1,
        delivered_at=None,
        dead_at=None,
        error=None,
        external_id=None,
    )


@pytest.mark.parametrize("state", list(State))
def test_every_state_renders_its_name_and_id_and_only_cancellable_ones_have_the_button(
    state: State,
) -> None:
    finished = (
        T0 + timedelta(seconds=5)
        if state in {State.SUCCEEDED, State.FAILED, State.CANCELLED}
        else None
    )
    shown = render.progress(job(state, finished_at=finished), task="count", may_resolve=False)
    assert (
        shown.content.splitlines()[0]
        == f"{render.ICONS[state]} **{state.value}** · `k7m2x9qa` · demo"
    )
    # A waiting job runs nothing: a cancel ends it at once, so it keeps its Cancel button.
    assert shown.cancellable == (state in {State.QUEUED, State.RUNNING, State.WAITING})
    assert len(shown.content) <= 2000


def test_running_shows_one_progress_line_with_bar_attempts_and_budget_use() -> None:
    """One line says where the job is (the same line as the CLI's); the bar agrees with it."""
    status = JobStatus(
        job(
            State.RUNNING,
            progress={"done": 2, "total": 5, "note": "counting"},
            usage={"tokens": 1234, "tool_calls": 2, "steps": 2},
        ),
        steps=[{"number": 3, "name": "step 3", "outcome": None}],
    )
    content = render.progress(status.job, task="", may_resolve=False).content
    assert "`▓▓▓▓▓░░░░░░░` 40% · Step 2 of 5 · counting" in content
    assert content.count("Step ") == 1
    assert "attempt 1 · 0 failures (max 3)" in content
    # The steps are counted once, by the progress line; the usage says the rest.
    assert "1,234 tokens · 2 tool calls" in content
    assert "2 steps" not in content
    done = JobStatus(job(State.SUCCEEDED, progress={"done": 5, "total": 5, "note": "done"}))
    assert (
        "`▓▓▓▓▓▓▓▓▓▓▓▓` 100% · 5 of 5 steps done"
        in render.progress(done.job, task="", may_resolve=False).content
    )


def test_a_finished_job_lists_what_it_left_behind() -> None:
    """The assets a round read with the job, ten at most, in the order they were made."""
    left = [(f"a{n}.txt", n) for n in range(12)]
    content = render.progress(
        job(State.SUCCEEDED, finished_at=T0 + timedelta(seconds=5)),
        task="",
        may_resolve=False,
        assets=left,
    ).content
    assert "Assets: a0.txt (0 B), a1.txt (1 B)," in content
    assert "a9.txt (9 B) and 2 more" in content
    running = render.progress(job(State.RUNNING), task="", may_resolve=False, assets=left)
    assert "Assets" not in running.content


def test_a_progress_line_never_shows_none() -> None:
    """A handler that reports no total (command output lines) gets a line without "of"."""
    lines = JobStatus(job(State.RUNNING, progress={"done": 1, "total": None, "note": "hi, you"}))
    content = render.progress(lines.job, task="", may_resolve=False).content
    assert "Step 1 · hi, you" in content
    assert "None" not in content
    assert "None" not in status_page.status_page(lines, task="", thread_id=None, deliveries=[])


def test_a_retry_wait_and_unknown_say_what_happens_next() -> None:
    wait = render.progress(
        job(State.QUEUED, reason="lease expired; retrying"), task="", may_resolve=False
    ).content
    assert "Runs again <t:" in wait
    assert "attempt 1 · 0 failures (max 3)" in wait
    assert "last try: lease expired; retrying" in wait
    unknown = render.progress(
        job(State.UNKNOWN, reason="worker lost"), task="", may_resolve=True
    ).content
    assert "`/job resolve k7m2x9qa`" in unknown


def test_user_text_is_inert_and_cut() -> None:
    shown = render.progress(
        job(State.QUEUED), task="@everyone **x** " + "y" * 5000, may_resolve=False
    ).content
    assert "@everyone" not in shown.replace("@\u200beveryone", "")
    assert "\\*\\*x\\*\\*" in shown
    assert len(shown) <= 2000
    assert render.code("a`b\nc", 10) == "aˋb c"


def test_a_notice_mentions_the_requester_with_the_outcome() -> None:
    done = job(
        State.SUCCEEDED, finished_at=T0 + timedelta(seconds=4), run_seconds=3.0, result={"ok": 1}
    )
    text = render.notice(done, row("succeeded"), 42)
    assert text == (
        "<@42> ✅ Job `k7m2x9qa` **succeeded**\nRun time 3.0 s · wall time 4.0 s\n"
        'Result: `{"ok": 1}`'
    )
    failed = render.notice(
        job(State.FAILED, finished_at=T0 + timedelta(seconds=2), run_seconds=1.0),
        row("failed", "boom"),
        42,
    )
    assert failed == "<@42> ❌ Job `k7m2x9qa` **failed**: boom\nRun time 1.0 s · wall time 2.0 s"
    resumed = render.notice(
        job(
            State.SUCCEEDED,
            finished_at=T0 + timedelta(seconds=9),
            run_seconds=8.0,
            attempts=4,
            failures=0,
        ),
        row("succeeded"),
        42,
    )
    assert "Run time 8.0 s · wall time 9.0 s · attempt 4 · 0 failures (max 3)" in resumed


def test_a_cancel_notice_names_who_cancelled_and_why_in_one_sentence() -> None:
    ended = T0 + timedelta(seconds=28.4)
    done = job(
        State.CANCELLED, finished_at=ended, run_seconds=27.4, cancel_requested_by="discord:1"
    )
    text = render.notice(done, row("cancelled", "Cancel button", Actor.REQUESTER), 42)
    assert text == (
        "<@42> ⛔ Job `k7m2x9qa` **cancelled** by <@1> (Cancel button)\n"
        "Run time 27.4 s · wall time 28.4 s"
    )
    by_operator = job(
        State.CANCELLED, finished_at=ended, run_seconds=27.4, cancel_requested_by="cli"
    )
    text = render.notice(by_operator, row("cancelled", None, Actor.OPERATOR), None)
    assert text.splitlines()[0] == "⛔ Job `k7m2x9qa` **cancelled** by an operator (cli)"
    # Acknowledged by the worker, the request's reason kept: still the requester's cancel.
    text = render.notice(done, row("cancelled", "Cancel button", Actor.WORKER), None)
    assert text.splitlines()[0].endswith("by <@1> (Cancel button)")
    # A deadline is the system's: its reason says what happened.
    late = job(State.CANCELLED, finished_at=ended, run_seconds=27.4, cancel_requested_by="system")
    text = render.notice(late, row("cancelled", "timed_out", Actor.SYSTEM), None)
    assert text.splitlines()[0] == "⛔ Job `k7m2x9qa` **cancelled**: timed_out"


def test_every_person_shown_is_a_mention_or_a_role_never_a_raw_id() -> None:
    """Item 2: a resolve by a Discord user reads "resolved by <@77>" (Discord shows the name),
    in the notice, the progress message and the status page's events; never "discord:77"."""
    resolved = job(
        State.SUCCEEDED,
        reason="resolved as succeeded: the ledger shows one charge",
        finished_at=T0 + timedelta(seconds=66),
        run_seconds=10.0,
    )
    notice = replace(
        row("succeeded", "resolved as succeeded: the ledger shows one charge", Actor.OPERATOR),
        from_state=State.UNKNOWN,
        by="discord:77",
        note="the ledger shows one charge",
    )
    text = render.notice(resolved, notice, 42)
    assert text.splitlines()[0] == (
        "<@42> ✅ Job `k7m2x9qa` **succeeded**, resolved by <@77>: the ledger shows one charge"
    )
    # The run time is the 10 s it ran; the minute it sat unknown is in the wall time only.
    assert text.splitlines()[1] == "Run time 10.0 s · wall time 1 min 6 s"
    from_cli = render.notice(resolved, replace(notice, by="operator"), 42)
    assert "resolved by an operator: the ledger" in from_cli
    events = [
        EventView(1, None, State.QUEUED, "requester", None, "submitted", T0, None, False),
        EventView(2, State.QUEUED, State.RUNNING, "worker", 1, None, T0, None, False),
        EventView(3, State.RUNNING, State.UNKNOWN, "system", 1, "worker lost", T0, None, False),
        EventView(
            4,
            State.UNKNOWN,
            State.SUCCEEDED,
            "operator",
            None,
            "resolved as succeeded: the ledger shows one charge",
            T0,
            {"by": "discord:77", "note": "the ledger shows one charge"},
            False,
        ),
    ]
    page = status_page.status_page(
        JobStatus(resolved, events=events), task="charge", thread_id=None, deliveries=[]
    )
    assert "— → queued by <@1>: submitted" in page
    assert "queued → running by worker" in page
    assert "unknown → succeeded by <@77>: resolved as succeeded: the ledger" in page
    progress = render.progress(resolved, task="charge", may_resolve=False).content
    for shown in (text, from_cli, page, progress):
        assert "discord:" not in shown


def test_a_finished_progress_message_does_not_contradict_itself() -> None:
    """Item 8: once it stopped, the progress line says what was done, without the phase it
    was in ("counting"), and the steps are counted once ("45 steps" beside "Step 44 of 60")."""
    cancelled = job(
        State.CANCELLED,
        progress={"done": 44, "total": 60, "note": "counting"},
        usage={"steps": 45},
        finished_at=T0 + timedelta(seconds=46),
        run_seconds=45.0,
        cancel_requested_by="discord:1",
    )
    content = render.progress(cancelled, task="", may_resolve=False).content
    assert "73% · 44 of 60 steps done" in content
    assert "counting" not in content
    assert "45 steps" not in content
    failed = job(
        State.FAILED,
        progress={"done": 2, "total": 5, "note": "counting"},
        usage={"steps": 3},
        reason="failed at step 3 as asked (fail_at_step)",
        finished_at=T0 + timedelta(seconds=4),
        run_seconds=3.0,
    )
    content = render.progress(failed, task="", may_resolve=False).content
    assert "40% · 2 of 5 steps done" in content
    assert "3 steps" not in content
    assert "counting" not in content
    lines = job(State.SUCCEEDED, progress={"done": 1, "total": None, "note": "hi", "unit": "line"})
    assert render.progress(lines, task="", may_resolve=False).content.count("1 line") == 1
    # One of anything is singular.
    assert render.usage_line({"tokens": 1, "tool_calls": 1, "steps": 1}) == (
        "1 token · 1 tool call · 1 step"
    )
    assert "1 steps" not in render.usage_line({"steps": 1})


def test_run_time_and_wall_time_are_each_named() -> None:
    """Item 9: a job that ran 4 s and waited while the sandbox was down took 15 s of wall
    time; both are shown, each with its name, in the progress message and the status page."""
    done = job(
        State.SUCCEEDED,
        finished_at=T0 + timedelta(seconds=15),
        run_seconds=4.0,
        progress={"done": 4, "total": 4, "note": "done"},
    )
    content = render.progress(done, task="", may_resolve=False).content
    assert "Run time 4.0 s · wall time 15.0 s · attempt 1" in content
    assert "Took" not in content
    page = status_page.status_page(JobStatus(done), task="", thread_id=None, deliveries=[])
    assert "(run time 4.0 s · wall time 15.0 s)" in page
    never = job(State.CANCELLED, finished_at=T0 + timedelta(seconds=3), attempts=0, run_seconds=0)
    shown = render.progress(never, task="", may_resolve=False).content
    assert "Did not run · wall time 3.0 s" in shown


def test_a_silent_worker_is_said_to_be_silent() -> None:
    """Item 12: a running job whose worker has not heartbeated for longer than
    ``SILENT_AFTER`` says when it was last heard from (a live Discord time), and what happens
    next; a job whose worker is heard from says nothing of it."""
    now = datetime.now(UTC)
    silent = job(State.RUNNING, heartbeat_at=now - timedelta(seconds=20))
    content = render.progress(silent, task="", may_resolve=False).content
    stamp = f"<t:{int((now - timedelta(seconds=20)).timestamp())}:R>"
    assert f"⚠️ Its worker was last heard from {stamp}; if it stays silent, the job is" in content
    assert render.progress(silent, task="", may_resolve=False).cancellable
    page = status_page.status_page(JobStatus(silent), task="", thread_id=None, deliveries=[])
    assert f"⚠️ Its worker was last heard from {stamp}." in page
    heard = job(State.RUNNING, heartbeat_at=now - timedelta(seconds=3))
    assert "heard from" not in render.progress(heard, task="", may_resolve=False).content
    ended = job(State.UNKNOWN, heartbeat_at=now - timedelta(seconds=60))
    assert "heard from" not in render.progress(ended, task="", may_resolve=False).content


def test_the_bots_own_answers_read_plainly() -> None:
    """Item 10: the empty-task answer ends its example cleanly (no "task:...."); item 11: a
    refused cancel names operators, the word the role and the docs use; item 5: params meant
    for another kind say which kind takes them."""
    assert render.EMPTY_TASK == "Say what to do, for example `/summon task:count to five`."
    assert "...." not in render.EMPTY_TASK
    refused = render.NOT_YOURS.format(id="k7m2x9qa")
    assert refused == "Only the requester or an operator can cancel job `k7m2x9qa`."
    source = Path(render.__file__).read_text() + Path("bot/commands/job.py").read_text()
    assert "moderator" not in source.replace("moderate a job", "")
    assert render.params_of_another_kind("agent", ["steps"], "demo") == (
        "`agent` jobs take no `steps`; `demo` jobs do: add `kind:demo` to your /summon."
    )


def test_the_notices_docs_discord_shows_are_the_ones_the_bot_writes() -> None:
    """docs/discord.md's example notices, rendered here: the doc cannot drift from the bot."""
    ended = T0 + timedelta(seconds=1)  # started_at

    def at(seconds: float) -> datetime:
        return ended + timedelta(seconds=seconds)

    rendered = [
        render.notice(
            job(State.SUCCEEDED, finished_at=at(5.2), run_seconds=5.2, result={"steps": 5}),
            row("succeeded"),
            42,
        ),
        render.notice(
            job(State.FAILED, finished_at=at(2), run_seconds=2.0),
            row("failed", "failed at step 2 as asked (fail_at_step)"),
            42,
        ),
        render.notice(
            job(
                State.CANCELLED,
                finished_at=at(2),
                run_seconds=2.0,
                requester="discord:42",
                cancel_requested_by="discord:42",
            ),
            row("cancelled", "not needed", Actor.REQUESTER),
            42,
        ),
        render.notice(
            job(State.SUCCEEDED, finished_at=at(64), run_seconds=40.5, attempts=4, failures=0),
            row("succeeded"),
            42,
        ),
        render.notice(
            job(State.UNKNOWN),
            row("unknown", "worker lost while a side effect was in flight"),
            42,
        ),
    ]
    doc = (Path(__file__).resolve().parents[2] / "docs" / "discord.md").read_text()
    block = doc.split("## Notices", 1)[1].split("```", 2)[1]
    assert block.strip().splitlines() == "\n".join(rendered).splitlines()


def test_the_status_page_shows_events_and_dead_letters() -> None:
    status = JobStatus(
        job(State.SUCCEEDED, finished_at=T0 + timedelta(seconds=3)),
        events=[
            EventView(1, None, State.QUEUED, "requester", None, "submitted", T0, None, False),
            EventView(2, State.QUEUED, State.RUNNING, "worker", 1, None, T0, None, False),
        ],
    )
    dead = Notice(
        id=8,
        job_id=1,
        from_state=State.RUNNING,
        to_state=State.SUCCEEDED,
        actor=Actor.WORKER,
        reason=None,
        at=T0,
        attempts=6,
        delivered_at=None,
        dead_at=T0,
        error="403 50013: Missing Permissions",
        external_id=None,
    )
    page = status_page.status_page(status, task="count", thread_id="55", deliveries=[dead])
    assert "Thread: <#55>" in page
    assert "⚠️ Notice (succeeded) not delivered: 403 50013: Missing Permissions" in page
    assert "queued → running by worker" in page
    assert "(wall time 3.0 s)" in page  # read without its attempts: no run time to show


def test_the_status_of_an_unknown_job_says_how_to_settle_it() -> None:
    page = status_page.status_page(
        JobStatus(job(State.UNKNOWN, reason="effect in doubt")),
        task="charge",
        thread_id=None,
        deliveries=[],
    )
    assert "`/job resolve id:k7m2x9qa outcome:... note:...`" in page
    assert "operator" in page


def test_durations_and_bars_read_naturally() -> None:
    assert [render.seconds(s) for s in (4.2, 185, 7800)] == ["4.2 s", "3 min 5 s", "2 h 10 min"]
    assert render.bar(0, 0).endswith("0%")
    assert render.bar(10, 5).endswith("100%")


def test_params_parse_json_values_and_refuse_junk() -> None:
    assert summon_params('steps=3 note="two words" flag=true') == {
        "steps": 3,
        "note": "two words",
        "flag": True,
    }
    for junk in ['"open', "=1", "steps", "a-b=1", "x" * 2000]:
        with pytest.raises(ValueError):  # noqa: PT011 - each has its own message
            summon_params(junk)


def test_every_bot_query_used_exists_and_none_is_unused() -> None:
    used: set[str] = set()
    for path in Path("bot").rglob("*.py"):
        used |= set(re.findall(r'\bsql\.[a-z]+\(\s*[\w.]+,\s*"([a-z_]+)"', path.read_text()))
    assert set(bot_queries()) == used


def _question(status: str, **changes: Any) -> Any:
    from jobs.engine.mail import Question, QuestionStatus

    values: dict[str, Any] = dict(
        id=5,
        job_id=1,
        key="colour",
        text="Which **colour**? @everyone",
        choices=("red", "green"),
        allow_text=False,
        asked_at=T0,
        expires_at=None,
        status=QuestionStatus(status),
        closed_at=None,
        closed_reason=None,
    )
    values.update(changes)
    return Question(**values)


def test_a_waiting_job_says_for_whom_and_what_or_until_when() -> None:
    asking = job(State.WAITING, wait_for="question", wait_text="Which colour?", wait_since=T0)
    assert render.waiting_line(asking) == (
        f"Waiting for <@42>: Which colour? · since <t:{int(T0.timestamp())}:R>"
    )
    until = T0 + timedelta(hours=2)
    sleeping = job(State.WAITING, wait_for="time", wait_until=until, wait_since=T0)
    stamp = int(until.timestamp())
    assert render.waiting_line(sleeping).startswith(f"Waiting until <t:{stamp}:f> (<t:{stamp}:R>)")
    listening = job(State.WAITING, wait_for="message", wait_since=T0)
    assert render.waiting_line(listening).startswith("Waiting for a message from <@42>")
    shown = render.progress(asking, task="count", may_resolve=False)
    assert "Waiting for <@42>: Which colour?" in shown.content
    assert shown.cancellable


def test_a_question_asks_then_says_how_it_ended_its_words_made_inert() -> None:
    asked = question_text.question("k7m2x9qa", _question("open"), 42)
    assert asked.startswith(
        "<@42> 💬 Job `k7m2x9qa` asks: **Which \\*\\*colour\\*\\*? @\u200beveryone**"
    )
    assert asked.endswith("Choose below.")
    answered = question_text.question(
        "k7m2x9qa", _question("answered", answer="red", answered_by="discord:7"), 42
    )
    assert "<@42>" not in answered  # only the open question pings
    assert answered.endswith("✅ Answered by <@7>: **red**")
    timed_out = question_text.question("k7m2x9qa", _question("timed_out"), 42)
    assert timed_out.endswith("⌛ Closed: no answer in time.")
    closed = question_text.question(
        "k7m2x9qa", _question("closed", closed_reason="the job was cancelled"), 42
    )
    assert closed.endswith("⛔ Closed: the job was cancelled.")
    refused = question_text.answer_refused(
        "already_answered", "x", _question("answered", answer="red", answered_by="cli")
    )
    assert refused == "Already answered by an operator: **red**. Nothing changed."


def test_the_status_page_lists_a_question_asked_while_it_runs() -> None:
    running = JobStatus(job(State.RUNNING), questions=[_question("open")])
    page = status_page.status_page(running, task="count", thread_id=None, deliveries=[])
    assert "💬 Asks <@42>: Which \\*\\*colour\\*\\*? @\u200beveryone" in page
