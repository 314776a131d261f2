"""Who may use the dashboard, and the CSRF check on every action.

Two ways in, either or both configured (:class:`~dashboard.settings.DashboardSettings`):

- **Token login.** ``/login`` takes a name and ``ERRAND_DASHBOARD_TOKEN``; the answer is a
  session cookie (HttpOnly, SameSite=Strict, Secure over https) holding the name and an expiry,
  signed with a key derived from the token, so changing the token ends every session.
- **Trusted proxy.** A request from one of ``ERRAND_DASHBOARD_TRUSTED_PROXIES`` carrying
  ``ERRAND_DASHBOARD_PROXY_HEADER`` is that user, if ``ERRAND_DASHBOARD_OPERATORS`` lists them.
  The header from any other address is ignored: anyone can send it.

Every POST but the login carries a CSRF token bound to the user (an HMAC of their name): a page
of another site cannot read it, so it cannot forge an action. The name an operator is known by
is what every action records; nothing secret is stored with it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import secrets
import time
from dataclasses import dataclass

from aiohttp import web

from dashboard.settings import DashboardSettings

COOKIE = "errand_session"
CSRF_FIELD = "csrf"
MAX_NAME = 64


@dataclass(frozen=True)
class Login:
    """The request's user, and how they came in (``token`` or ``proxy``)."""

    user: str
    via: str


class Access:
    """Decides who a request comes from, makes sessions and checks CSRF tokens."""

    def __init__(self, settings: DashboardSettings) -> None:
        self.settings = settings
        token = settings.token.get_secret_value().strip() if settings.token else None
        self._token = token
        # Derived from the token (sessions survive a restart, die with a new token); a proxy-only
        # dashboard signs its CSRF tokens with a key of its own.
        seed = token.encode() if token else secrets.token_bytes(32)
        self._key = hashlib.sha256(b"errand-dashboard:" + seed).digest()

    # -- who -------------------------------------------------------------------------------

    def from_proxy(self, request: web.Request) -> str | None:
        """The user the trusted proxy names, or None: no proxy mode, an address that is not a
        configured proxy (the header is then ignored), or no header."""
        header = self.settings.proxy_header
        if not header or not self.trusted(request):
            return None
        value = request.headers.get(header, "").strip()
        return value or None

    def trusted(self, request: web.Request) -> bool:
        """Whether the request's peer is one of the configured proxies."""
        try:
            peer = ipaddress.ip_address(request.remote or "")
        except ValueError:
            return False
        return any(peer in network for network in self.settings.trusted_proxies)

    def from_session(self, request: web.Request) -> str | None:
        """The user of a valid, unexpired session cookie, or None."""
        if self._token is None:
            return None
        cookie = request.cookies.get(COOKIE, "")
        payload, _, mac = cookie.partition(".")
        if not payload or not hmac.compare_digest(mac, self._sign(payload)):
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(payload.encode()))
            user, expires = str(data["u"]), float(data["e"])
        except (ValueError, KeyError, TypeError):
            return None
        return user if expires > time.time() else None

    def login_of(self, request: web.Request) -> Login | None:
        """Who the request comes from (None: nobody signed in)."""
        proxied = self.from_proxy(request)
        if proxied is not None:
            return Login(proxied, "proxy")
        user = self.from_session(request)
        return Login(user, "token") if user is not None else None

    def allowed(self, login: Login) -> bool:
        """A proxy's user must be on the operators' list; a token's holder is an operator."""
        return login.via == "token" or login.user in self.settings.operators

    # -- token login -------------------------------------------------------------------------

    @property
    def token_login(self) -> bool:
        return self._token is not None

    def check_token(self, given: str) -> bool:
        return self._token is not None and hmac.compare_digest(
            given.strip().encode(), self._token.encode()
        )

    def session_cookie(self, user: str) -> str:
        """A signed session for ``user``, valid for the configured hours."""
        expires = time.time() + self.settings.session_hours * 3600
        payload = base64.urlsafe_b64encode(json.dumps({"u": user, "e": expires}).encode())
        text = payload.decode()
        return f"{text}.{self._sign(text)}"

    def secure(self, request: web.Request) -> bool:
        """Whether the session cookie is marked Secure: as configured, else when the request
        came over https (said by a trusted proxy's ``X-Forwarded-Proto``)."""
        if self.settings.secure_cookie is not None:
            return self.settings.secure_cookie
        if request.secure:
            return True
        return self.trusted(request) and request.headers.get("X-Forwarded-Proto") == "https"

    # -- CSRF ------------------------------------------------------------------------------

    def csrf_token(self, user: str) -> str:
        """The CSRF token of ``user``'s forms."""
        return self._sign(f"csrf:{user}")

    def csrf_ok(self, user: str, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(str(given), self.csrf_token(user))

    def _sign(self, text: str) -> str:
        return hmac.new(self._key, text.encode(), hashlib.sha256).hexdigest()


def clean_name(name: str) -> str | None:
    """A person's name as given at login, or None when it is empty, too long or holds control
    characters."""
    name = " ".join(name.split())
    if not name or len(name) > MAX_NAME or not name.isprintable():
        return None
    return name
