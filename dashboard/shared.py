"""What the pages and actions share: the templates, the job list's filter as the query string
carries it, and the one way a handler refuses bad input (a short error page, nothing changed)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import jinja2
from aiohttp import web
from multidict import MultiMapping

from dashboard.access import CSRF_FIELD, Access, Login
from jobs.transport import JobFilter, JobStore, Settings, State

STATES = [s.value for s in State]
MAX_TEXT = 200
"""The longest filter value taken (a task search, a requester): more is a mistake."""

templates = jinja2.Environment(
    loader=jinja2.PackageLoader("dashboard", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def bad_input(why: str) -> web.HTTPException:
    """A request the dashboard refuses (400): its page says why, in one line; nothing
    changed."""
    return refusal(web.HTTPBadRequest, "Not done", why)


def refusal(kind: type[web.HTTPException], title: str, why: str) -> web.HTTPException:
    """An error page of HTTP status ``kind``, saying ``why`` in one line."""
    return kind(text=render_error(title, why), content_type="text/html")


@dataclass(frozen=True)
class Context:
    """What every page needs: the store, the settings, who is signed in, their CSRF token."""

    store: JobStore
    settings: Settings
    access: Access
    pool: Any
    login: Login
    done: str | None = None
    """What the last action did, shown once at the top of the page it led to."""

    @property
    def csrf(self) -> str:
        return self.access.csrf_token(self.login.user)


def render(name: str, ctx: Context | None, **values: Any) -> web.Response:
    """A page from template ``name``."""
    page = templates.get_template(name).render(
        login=ctx.login if ctx else None,
        csrf=ctx.csrf if ctx else "",
        csrf_field=CSRF_FIELD,
        done=ctx.done if ctx else None,
        **values,
    )
    return web.Response(text=page, content_type="text/html", charset="utf-8")


def render_error(title: str, why: str) -> str:
    return templates.get_template("error.html").render(
        login=None, csrf="", csrf_field=CSRF_FIELD, done=None, title=title, why=why
    )


# -- the job list's filter, as the query string carries it ---------------------------------


def _text(query: MultiMapping[str], name: str) -> str | None:
    value = query.get(name, "").strip()
    if len(value) > MAX_TEXT:
        raise bad_input(f"{name}: at most {MAX_TEXT} characters")
    if value and not value.isprintable():
        raise bad_input(f"{name}: only printable characters")
    return value or None


def _time(query: MultiMapping[str], name: str) -> datetime | None:
    value = _text(query, name)
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise bad_input(f"{name}: a date and time such as 2026-05-01T09:30 (UTC)") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@dataclass(frozen=True)
class ListQuery:
    """The job list as asked: its filter (states, kind, requester, server, time, text), its
    order and the page's cursor."""

    states: tuple[State, ...] = ()
    kind: str | None = None
    requester: str | None = None
    guild: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    text: str | None = None
    oldest_first: bool = False
    after: int | None = None

    @classmethod
    def parse(cls, query: MultiMapping[str]) -> ListQuery:
        """Raises a 400 (bad_input) naming the first field that is wrong."""
        states = []
        for value in query.getall("state", []):
            if value not in STATES:
                raise bad_input(f"state: one of {', '.join(STATES)}")
            states.append(State(value))
        order = query.get("order", "newest")
        if order not in ("newest", "oldest"):
            raise bad_input("order: newest or oldest")
        after = query.get("after", "").strip()
        if after and not after.isdigit():
            raise bad_input("after: a job list's page cursor (a number)")
        since, until = _time(query, "since"), _time(query, "until")
        if since and until and since >= until:
            raise bad_input("since must be before until")
        return cls(
            states=tuple(dict.fromkeys(states)),
            kind=_text(query, "kind"),
            requester=_text(query, "requester"),
            guild=_text(query, "guild"),
            since=since,
            until=until,
            text=_text(query, "q"),
            oldest_first=order == "oldest",
            after=int(after) if after else None,
        )

    def pairs(self) -> list[tuple[str, str]]:
        """The query string's pairs of this filter."""
        pairs = [("state", s.value) for s in self.states]
        for name, value in (
            ("kind", self.kind),
            ("requester", self.requester),
            ("guild", self.guild),
            ("since", self.since.strftime("%Y-%m-%dT%H:%M") if self.since else None),
            ("until", self.until.strftime("%Y-%m-%dT%H:%M") if self.until else None),
            ("q", self.text),
        ):
            if value:
                pairs.append((name, value))
        return pairs

    def url(self, path: str = "/jobs", **change: Any) -> str:
        """``path`` with this filter's query string (``after``/``order`` changed as given)."""
        pairs = [(k, v) for k, v in self.pairs() if k not in change]
        oldest = change.get("oldest_first", self.oldest_first)
        if oldest:
            pairs.append(("order", "oldest"))
        if change.get("after") is not None:
            pairs.append(("after", str(change["after"])))
        return f"{path}?{urlencode(pairs)}" if pairs else path

    @property
    def empty(self) -> bool:
        return not self.pairs()

    @property
    def where(self) -> JobFilter:
        """The store's filter of this list."""
        return JobFilter(
            states=self.states,
            kind=self.kind,
            requester=self.requester,
            origin_group=self.guild,
            since=self.since,
            until=self.until,
            text=self.text,
        )
