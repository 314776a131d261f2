"""Who may use ``errand dashboard``, against the real process: it does not start without a login;
the token login gives an HttpOnly, SameSite cookie; an action without its CSRF token changes
nothing; in trusted-proxy mode the user header counts only from a configured proxy's address
and only for a listed operator."""

from __future__ import annotations

import base64
import html
import http.client
import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.support.cli import CLI, ROOT
from tests.support.dashboard import TOKEN, Database, Running, environment, start_dashboard


@pytest.fixture
def database(server_dsn: str, template_db: str) -> Iterator[Database]:
    db = Database(server_dsn, template_db)
    yield db
    db.drop()


@pytest.fixture
def dashboards(database: Database, tmp_path: Path) -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    for running in started:
        running.stop()


class Client:
    """Plain HTTP to one dashboard, no redirects followed, cookies kept by hand."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookie: str | None = None

    def send(
        self,
        method: str,
        path: str,
        form: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        sent = dict(headers or {})
        body = None
        if form is not None:
            body = urlencode(form)
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        if self.cookie:
            sent["Cookie"] = self.cookie
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        text = response.read().decode()
        found = {k.lower(): v for k, v in response.getheaders()}
        conn.close()
        return response.status, found, text

    def login(self, name: str = "ada") -> str:
        status, headers, _ = self.send("POST", "/login", {"name": name, "token": TOKEN})
        assert status == 303, status
        self.cookie = headers["set-cookie"].split(";")[0]
        return headers["set-cookie"]

    def csrf(self) -> str:
        _, _, page = self.send("GET", "/")
        found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        assert found, page[:500]
        return found[1]


def test_without_a_login_configured_the_dashboard_does_not_start(
    database: Database, tmp_path: Path
) -> None:
    env = environment(database.dsn, tmp_path)
    done = subprocess.run(
        [*CLI, "dashboard"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "no login is configured" in lines[0]
    assert "ERRAND_DASHBOARD_TOKEN" in lines[0]


def test_errand_run_with_the_dashboard_refuses_to_start_without_a_login(
    database: Database, tmp_path: Path
) -> None:
    env = environment(database.dsn, tmp_path, DISCORD_TOKEN="x" * 59)
    done = subprocess.run(
        [*CLI, "run", "--dashboard"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip().splitlines()[0]]  # one line
    assert "the dashboard does not start: no login is configured" in done.stderr


def test_the_token_login_refuses_a_wrong_token_and_sets_a_safe_cookie_for_the_right_one(
    database: Database, dashboards: list[Running], tmp_path: Path
) -> None:
    dashboards.append(start_dashboard(database.dsn, tmp_path))
    client = Client(dashboards[0].port or 0)
    status, headers, _ = client.send("GET", "/jobs")
    assert (status, headers["location"]) == (303, "/login?next=/jobs")
    status, headers, page = client.send("POST", "/login", {"name": "ada", "token": "wrong"})
    assert status == 401
    assert "set-cookie" not in headers
    assert "wrong token" in page
    cookie = client.login()
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert "Secure" not in cookie  # plain http here; over https it is marked Secure
    status, _, page = client.send("GET", "/jobs")
    assert status == 200
    assert '<span id="user">ada</span>' in page
    # A forged cookie (another name, the old signature) is nobody. The value is quoted when it
    # holds base64 padding, which depends on the expiry's digits: forge it the same way.
    key, _, value = client.cookie.partition("=")
    quote = '"' if value.startswith('"') else ""
    mac = value.strip('"').rpartition(".")[2]
    forged = {"u": "eve", "e": time.time() + 3600}
    payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode()
    client.cookie = f"{key}={quote}{payload}.{mac}{quote}"
    assert client.send("GET", "/jobs")[0] == 303


def test_an_action_without_its_csrf_token_changes_nothing(
    database: Database, dashboards: list[Running], tmp_path: Path
) -> None:
    dashboards.append(start_dashboard(database.dsn, tmp_path))
    client = Client(dashboards[0].port or 0)
    client.login("ada")
    for form in ({}, {"csrf": "0" * 64}):
        status, _, page = client.send("POST", "/kinds/noop/pause", form)
        assert status == 403
        assert "CSRF token is missing or wrong" in page
    assert database.fetch("SELECT * FROM kind_setting") == []
    assert database.fetch("SELECT * FROM operator_action") == []
    status, _, _ = client.send("POST", "/kinds/noop/pause", {"csrf": client.csrf()})
    assert status == 303
    [paused] = database.fetch("SELECT paused_by FROM kind_setting WHERE kind = 'noop'")
    assert paused["paused_by"] == "ada"
    [action] = database.fetch("SELECT by, action, kind FROM operator_action")
    assert action == {"by": "ada", "action": "pause", "kind": "noop"}


def test_a_proxy_header_from_an_address_that_is_not_a_configured_proxy_is_ignored(
    database: Database, dashboards: list[Running], tmp_path: Path
) -> None:
    dashboards.append(
        start_dashboard(
            database.dsn,
            tmp_path,
            ERRAND_DASHBOARD_TOKEN="",
            ERRAND_DASHBOARD_PROXY_HEADER="X-Forwarded-Email",
            ERRAND_DASHBOARD_TRUSTED_PROXIES="10.9.8.7, 192.0.2.0/24",
            ERRAND_DASHBOARD_OPERATORS="ada@example.com",
        )
    )
    client = Client(dashboards[0].port or 0)
    status, _, page = client.send("GET", "/", headers={"X-Forwarded-Email": "ada@example.com"})
    assert status == 401  # 127.0.0.1 is not a configured proxy: nobody is signed in
    assert "ada@example.com" not in page
    status, _, _ = client.send(
        "POST", "/kinds/noop/pause", {}, headers={"X-Forwarded-Email": "ada@example.com"}
    )
    assert status == 401
    assert database.fetch("SELECT * FROM kind_setting") == []


def test_a_configured_proxys_header_signs_in_a_listed_operator_only(
    database: Database, dashboards: list[Running], tmp_path: Path
) -> None:
    dashboards.append(
        start_dashboard(
            database.dsn,
            tmp_path,
            ERRAND_DASHBOARD_TOKEN="",
            ERRAND_DASHBOARD_PROXY_HEADER="X-Forwarded-Email",
            ERRAND_DASHBOARD_TRUSTED_PROXIES="127.0.0.1",
            ERRAND_DASHBOARD_OPERATORS="ada@example.com,bob@example.com",
        )
    )
    client = Client(dashboards[0].port or 0)
    ada = {"X-Forwarded-Email": "ada@example.com"}
    status, _, page = client.send("GET", "/", headers=ada)
    assert status == 200
    assert '<span id="user">ada@example.com</span>' in page
    status, _, page = client.send("GET", "/", headers={"X-Forwarded-Email": "eve@example.com"})
    assert status == 403
    assert "not on the operators' list" in html.unescape(page)
    assert client.send("GET", "/")[0] == 401  # no header, no token login
    confirm = client.send("GET", "/kinds/noop/pause", headers=ada)[2]
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', confirm)
    assert token is not None
    status, _, _ = client.send("POST", "/kinds/noop/pause", {"csrf": token[1]}, headers=ada)
    assert status == 303
    [action] = database.fetch("SELECT by, action FROM operator_action")
    assert action == {"by": "ada@example.com", "action": "pause"}
