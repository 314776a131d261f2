"""What an operator does from the dashboard: cancel, force cancel, resolve ``unknown``, retry
a failed job, pause and resume a kind, and cancel or retry every job a filter matches.

Each action is two requests: a GET shows what it will do (for a bulk action, how many jobs it
touches now) with a form; the form's POST, checked for its CSRF token by the app, does it
through the store's verbs as an operator named by the login, and records it
(``operator_action``; a job's own event names the person too). A refusal (a job already ended,
a bad note) is a short error page; nothing changed.
"""

from __future__ import annotations

from urllib.parse import urlencode

from aiohttp import web

from dashboard.pages import COUNT_CAP, job_id_of
from dashboard.shared import Context, ListQuery, bad_input, refusal, render
from jobs import ErrandError
from jobs.transport import Actor, State

RESOLVE_AS = ("succeeded", "failed", "retry", "cancelled")
MAX_NOTE = 500
JOB_ACTIONS = {
    "cancel": "Cancel",
    "force-cancel": "Force cancel",
    "resolve": "Resolve",
    "retry": "Retry as a new job",
}


def _done(path: str, message: str) -> web.HTTPSeeOther:
    return web.HTTPSeeOther(f"{path}?{urlencode({'done': message})}")


def _refused(exc: ErrandError) -> web.HTTPException:
    return refusal(web.HTTPConflict, "Not done", str(exc))


def _action(request: web.Request) -> str:
    action = request.match_info["action"]
    if action not in JOB_ACTIONS:
        raise web.HTTPNotFound(text="no such action")
    return action


async def confirm_job_action(request: web.Request, ctx: Context) -> web.Response:
    """What the action will do to the job, and the form that does it."""
    action = _action(request)
    public_id = job_id_of(request)
    try:
        job = await ctx.store.get(public_id)
    except ErrandError as exc:
        raise _refused(exc) from None
    return render(
        "confirm.html",
        ctx,
        title=f"{JOB_ACTIONS[action]} job {job.public_id}?",
        action=action,
        target=f"/jobs/{job.public_id}/{action}",
        back=f"/jobs/{job.public_id}",
        job=job,
        count=None,
        hidden=[],
        resolve_as=RESOLVE_AS,
    )


async def job_action(request: web.Request, ctx: Context) -> web.Response:
    """Do the action to the job, as the signed-in operator; back to the job's page."""
    action = _action(request)
    public_id = job_id_of(request)
    form = await request.post()
    by = ctx.login.user
    store = ctx.store
    try:
        if action in ("cancel", "force-cancel"):
            force = action == "force-cancel"
            outcome = await store.cancel(
                public_id, actor=Actor.OPERATOR, by=by, reason="cancelled by operator", force=force
            )
            await store.record_action(
                by,
                "force_cancel" if force else "cancel",
                job_id=outcome.job.id,
                detail={"outcome": outcome.outcome.value},
            )
            message = f"cancel: {outcome.outcome.value.replace('_', ' ')}"
        elif action == "resolve":
            outcome_as = str(form.get("as", ""))
            note = " ".join(str(form.get("note", "")).split())
            if outcome_as not in RESOLVE_AS:
                raise bad_input(f"resolve as one of: {', '.join(RESOLVE_AS)}")
            if not note or len(note) > MAX_NOTE:
                raise bad_input(f"a note is required (at most {MAX_NOTE} characters)")
            job = await store.resolve(
                public_id, actor=Actor.OPERATOR, outcome=outcome_as, note=note, by=by
            )
            await store.record_action(by, "resolve", job_id=job.id, detail={"as": outcome_as})
            message = f"resolved as {outcome_as}"
        else:
            made = await store.retry(public_id, by=by)
            raise _done(f"/jobs/{made.public_id}", f"retry of {public_id}")
    except ErrandError as exc:
        raise _refused(exc) from None
    raise _done(f"/jobs/{public_id}", message)


def _bulk(request: web.Request) -> str:
    action = request.match_info["action"]
    if action not in ("cancel", "retry"):
        raise web.HTTPNotFound(text="no such action")
    return action


async def confirm_bulk(request: web.Request, ctx: Context) -> web.Response:
    """How many jobs of the filter the bulk action would touch now, and its form."""
    action = _bulk(request)
    asked = ListQuery.parse(request.query)
    if action == "cancel":
        where = _narrowed(asked, [State.QUEUED, State.RUNNING, State.WAITING])
        verb = "Cancel"
    else:
        where = _narrowed(asked, [State.FAILED])
        verb = "Retry"
    count = await ctx.store.count(where.where, cap=COUNT_CAP) if where else 0
    return render(
        "confirm.html",
        ctx,
        title=f"{verb} every matching job?",
        action=f"bulk-{action}",
        target=f"/bulk/{action}",
        back=asked.url(),
        job=None,
        count=count,
        cap=COUNT_CAP,
        hidden=asked.pairs(),
        resolve_as=RESOLVE_AS,
    )


def _narrowed(asked: ListQuery, states: list[State]) -> ListQuery | None:
    keep = tuple(s for s in states if not asked.states or s in asked.states)
    if not keep:
        return None
    from dataclasses import replace

    return replace(asked, states=keep)


async def bulk_action(request: web.Request, ctx: Context) -> web.Response:
    """Cancel or retry every job the filter matches now (at most the cap)."""
    action = _bulk(request)
    form = await request.post()
    asked = ListQuery.parse(form)  # type: ignore[arg-type]  # the form's fields are text
    by = ctx.login.user
    try:
        if action == "cancel":
            done = await ctx.store.cancel_matching(asked.where, by=by)
            message = f"cancelled {done.changed} of {done.matched} matching job(s)"
        else:
            done = await ctx.store.retry_matching(asked.where, by=by)
            message = f"retried {done.changed} of {done.matched} failed job(s)"
    except ErrandError as exc:
        raise _refused(exc) from None
    raise web.HTTPSeeOther(
        asked.url() + ("&" if not asked.empty else "?") + urlencode({"done": message})
    )


def _kind(request: web.Request) -> tuple[str, str]:
    kind, action = request.match_info["kind"], request.match_info["action"]
    if action not in ("pause", "resume"):
        raise web.HTTPNotFound(text="no such action")
    if not kind or len(kind) > 100 or not kind.isprintable():
        raise bad_input("not a kind's name")
    return kind, action


async def confirm_kind(request: web.Request, ctx: Context) -> web.Response:
    kind, action = _kind(request)
    return render(
        "confirm.html",
        ctx,
        title=f"{action.capitalize()} kind {kind}?",
        action=action,
        target=f"/kinds/{kind}/{action}",
        back="/",
        job=None,
        count=None,
        hidden=[],
        resolve_as=RESOLVE_AS,
    )


async def kind_action(request: web.Request, ctx: Context) -> web.Response:
    """Pause or resume a kind, as the signed-in operator."""
    kind, action = _kind(request)
    try:
        if action == "pause":
            await ctx.store.pause(kind, by=ctx.login.user)
        else:
            await ctx.store.resume(kind, by=ctx.login.user)
    except ErrandError as exc:
        raise _refused(exc) from None
    raise _done("/", f"{kind} {'paused' if action == 'pause' else 'resumed'}")
