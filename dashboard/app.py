"""The dashboard's aiohttp application: its routes, the middleware that lets only operators in
and checks every action's CSRF token, the login, and the live updates' event stream.

Pages are rendered on the server (Jinja2); the browser needs no script to read or act. One
vendored script, htmx (``static/htmx.min.js``), reloads a page's live part when the event stream
says one of its jobs changed (``static/live.js``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from dashboard import actions, pages
from dashboard.access import COOKIE, CSRF_FIELD, Access, Login, clean_name
from dashboard.live import Live
from dashboard.settings import DashboardSettings
from dashboard.shared import Context, refusal, render
from jobs.transport import JobStore, Settings, get_logger

log = get_logger("dashboard")

STATIC = Path(__file__).parent / "static"

View = Callable[[web.Request, Context], Awaitable[web.StreamResponse]]

STORE = web.AppKey("store", JobStore)
SETTINGS = web.AppKey("settings", Settings)
ACCESS = web.AppKey("access", Access)
LIVE = web.AppKey("live", Live)
POOL = web.AppKey("pool", object)
LOGIN = "login"


def build_app(
    store: JobStore, settings: Settings, dashboard: DashboardSettings, live: Live, pool: Any
) -> web.Application:
    """The application over an open engine's store and pool."""
    app = web.Application(middlewares=[_secure_headers, _operators_only])
    app[STORE] = store
    app[SETTINGS] = settings
    app[ACCESS] = Access(dashboard)
    app[LIVE] = live
    app[POOL] = pool
    app.router.add_get("/login", login_form)
    app.router.add_post("/login", login)
    app.router.add_post("/logout", logout)
    app.router.add_get("/", _view(pages.overview))
    app.router.add_get("/jobs", _view(pages.job_list))
    app.router.add_get("/jobs/{job}", _view(pages.one_job))
    app.router.add_get("/jobs/{job}/assets/{name}", _view(pages.asset))
    app.router.add_get("/jobs/{job}/{action}", _view(actions.confirm_job_action))
    app.router.add_post("/jobs/{job}/{action}", _view(actions.job_action))
    app.router.add_get("/bulk/{action}", _view(actions.confirm_bulk))
    app.router.add_post("/bulk/{action}", _view(actions.bulk_action))
    app.router.add_get("/kinds", _view(pages.kinds_and_schedules))
    app.router.add_get("/kinds/{kind}/{action}", _view(actions.confirm_kind))
    app.router.add_post("/kinds/{kind}/{action}", _view(actions.kind_action))
    app.router.add_get("/events", events)
    app.router.add_static("/static/", STATIC)
    return app


def _view(view: View) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(request: web.Request) -> web.StreamResponse:
        app = request.app
        done = request.query.get("done", "")[:200]
        ctx = Context(
            app[STORE],
            app[SETTINGS],
            app[ACCESS],
            app[POOL],
            request[LOGIN],
            done if done.isprintable() and done else None,
        )
        return await view(request, ctx)

    return handler


@web.middleware
async def _secure_headers(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    response = await handler(request)
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault(
        "Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'"
    )
    return response


@web.middleware
async def _operators_only(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Only a signed-in operator passes (the login form and static files excepted), and every
    POST but the login carries that operator's CSRF token."""
    if request.path == "/login" or request.path.startswith("/static/"):
        return await handler(request)
    access = request.app[ACCESS]
    found = access.login_of(request)
    if found is None:
        if request.method == "GET" and request.path != "/events" and access.token_login:
            raise web.HTTPSeeOther("/login?" + urlencode({"next": request.path_qs}))
        raise refusal(web.HTTPUnauthorized, "Sign in first", _how_to_sign_in(access))
    if not access.allowed(found):
        raise refusal(
            web.HTTPForbidden, "Not an operator", f"{found.user} is not on the operators' list"
        )
    if request.method == "POST":
        form = await request.post()
        given = form.get(CSRF_FIELD) or request.headers.get("X-CSRF-Token")
        if not access.csrf_ok(found.user, str(given) if given else None):
            log.warning("dashboard.csrf_refused", path=request.path, user=found.user)
            raise refusal(
                web.HTTPForbidden,
                "Refused",
                "this action's CSRF token is missing or wrong; reload the page",
            )
    request[LOGIN] = found
    return await handler(request)


def _how_to_sign_in(access: Access) -> str:
    if access.token_login:
        return "sign in at /login with the dashboard's token"
    return "sign in through the single-sign-on proxy"


async def login_form(request: web.Request) -> web.Response:
    access = request.app[ACCESS]
    if not access.token_login:
        raise refusal(web.HTTPNotFound, "No token login", _how_to_sign_in(access))
    return render("login.html", None, title="Sign in", error=None, next=_next(request.query))


def _next(values: Any) -> str:
    """Where to go after the login: a path of this site only."""
    target = str(values.get("next", "/"))
    return target if target.startswith("/") and not target.startswith("//") else "/"


async def login(request: web.Request) -> web.Response:
    """Check the token; with the right one, a session cookie for the name given."""
    access = request.app[ACCESS]
    form = await request.post()
    name = clean_name(str(form.get("name", "")))
    target = _next(form)
    if not access.token_login or not access.check_token(str(form.get("token", ""))):
        log.warning("dashboard.login_refused", peer=request.remote)
        page = render("login.html", None, title="Sign in", error="wrong token", next=target)
        page.set_status(401)
        return page
    if name is None:
        page = render(
            "login.html",
            None,
            title="Sign in",
            error="give your name (at most 64 characters): every action records it",
            next=target,
        )
        page.set_status(400)
        return page
    log.info("dashboard.signed_in", user=name)
    response = web.HTTPSeeOther(target)
    response.set_cookie(
        COOKIE,
        access.session_cookie(name),
        httponly=True,
        samesite="Strict",
        secure=access.secure(request),
        path="/",
        max_age=int(access.settings.session_hours * 3600),
    )
    raise response


async def logout(request: web.Request) -> web.Response:
    response = web.HTTPSeeOther("/login")
    response.del_cookie(COOKIE, path="/")
    raise response


async def events(request: web.Request) -> web.StreamResponse:
    """The live updates as server-sent events: one ``data:`` line per change."""
    login: Login = request[LOGIN]
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # nginx, and proxies like it, must not hold it back
        }
    )
    await response.prepare(request)
    await response.write(b": open\n\n")
    log.debug("dashboard.stream_opened", user=login.user)
    async for update in request.app[LIVE].updates():
        await response.write(f"data: {update}\n\n".encode())
    return response
