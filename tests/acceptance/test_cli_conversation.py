"""``errand job answer`` and ``errand job tell`` with a real ``errand worker``: a ``demo`` that
asks waits (``job list --state waiting``, ``job status`` in words and ``--json``), the answer
resumes it, and every bad answer or message is one line on stderr, exit code 2, nothing
changed."""

from __future__ import annotations

import json

import asyncpg

from tests.support.cli import RunErrand
from tests.support.polling import poll

from .conftest import ErrandJson, SpawnWorker

PARKS_AT_ONCE = {"ERRAND_WORKER_PARK_AFTER_SECONDS": "0"}


async def _waiting(errand_json: ErrandJson, job_id: str) -> dict[str, object]:
    async def listed() -> list[dict[str, object]]:
        found = await errand_json("job", "list", "--state", "waiting", "--json")
        return [j for j in found["jobs"] if j["id"] == job_id]

    [job] = await poll(listed, within=30)
    return job


async def test_a_question_is_shown_waiting_answered_from_the_cli_and_resumes_the_job(
    errand_json: ErrandJson, run_errand: RunErrand, spawn_worker: SpawnWorker
) -> None:
    submitted = await errand_json(
        "job", "submit", "demo", "-p", "steps=2", "-p", "step_seconds=0",
        "-p", "ask=Which colour?", "-p", "choices=red,green", "--json",
    )  # fmt: skip
    job_id = str(submitted["id"])
    await spawn_worker(**PARKS_AT_ONCE)
    listed = await _waiting(errand_json, job_id)
    assert listed["state"] == "waiting"
    assert listed["waiting"] == {
        "for": "question",
        "key": "ask",
        "question": "Which colour?",
        "until": None,
        "since": listed["waiting"]["since"],  # type: ignore[index]
    }
    shown = await run_errand("job", "status", job_id)
    assert shown.code == 0, shown.err
    assert "waiting: for an answer to 'ask': Which colour? · since" in shown.out
    assert "  ask: Which colour? [red, green] → open" in shown.out

    not_offered = await run_errand("job", "answer", job_id, "blue")
    unknown_key = await run_errand("job", "answer", job_id, "red", "--question", "size")
    for bad, said in (
        (not_offered, "'blue' is not one of the choices of 'ask': red, green"),
        (unknown_key, f"job {job_id} is not waiting for question 'size'"),
    ):
        assert (bad.code, bad.err.strip()) == (2, f"error: {said}")
    assert (await errand_json("job", "status", job_id, "--json"))["messages"] == []

    answered = await errand_json("job", "answer", job_id, "Green", "--json")
    assert (answered["outcome"], answered["question"]["answer"]) == ("answered", "green")
    assert answered["state"] in {"queued", "running", "succeeded"}

    async def finished() -> dict[str, object] | None:
        job = await errand_json("job", "status", job_id, "--json")
        return job if job["state"] == "succeeded" else None

    done = await poll(finished, within=30)
    assert done["result"] == {"steps": 2, "attempt": 2, "answer": "green", "answered_by": "cli"}
    again = await run_errand("job", "answer", job_id, "red")
    assert (again.code, again.err.strip()) == (
        2,
        f"error: question 'ask' of job {job_id}: already answered by cli",
    )
    timeline = await run_errand("job", "show", job_id)
    assert "question by worker: asked: Which colour?" in timeline.out
    assert "question by operator: answered by cli: green" in timeline.out
    assert "(refused: already answered by cli)" in timeline.out


async def test_tell_records_a_follow_up_and_bad_input_changes_nothing(
    errand_json: ErrandJson, run_errand: RunErrand, pool: asyncpg.Pool
) -> None:
    """No worker runs: the job stays queued and takes the follow-up; an unknown job, an ended
    job and empty words are refused; a job that asks nothing has nothing to answer."""
    queued = await errand_json("job", "submit", "demo", "--json")
    job_id = str(queued["id"])
    told = await errand_json("job", "tell", job_id, "please use blue", "--json")
    assert told["message"]["seq"] == 1
    assert told["message"]["text"] == "please use blue"
    shown = await run_errand("job", "status", job_id)
    assert "  1. cli: please use blue" in shown.out
    cancelled = await errand_json("job", "submit", "noop", "--json")
    await run_errand("job", "cancel", str(cancelled["id"]))
    cases = [
        (("job", "tell", "zzzzzzzz", "hi"), "error: no such job: zzzzzzzz"),
        (
            ("job", "tell", str(cancelled["id"]), "hi"),
            f"error: job {cancelled['id']} already cancelled: nobody would read it",
        ),
        (("job", "tell", job_id, "   "), "error: message: say something"),
        (("job", "answer", "zzzzzzzz", "red"), "error: no such job: zzzzzzzz"),
        (("job", "answer", job_id, "red"), f"error: job {job_id} is not waiting for a question"),
    ]
    for argv, said in cases:
        ran = await run_errand(*argv)
        assert (ran.code, ran.err.strip()) == (2, said), argv
    assert await pool.fetchval("SELECT count(*) FROM job_message") == 1
    rows = json.loads((await run_errand("job", "status", job_id, "--json")).out)
    assert (rows["state"], len(rows["messages"])) == ("queued", 1)
