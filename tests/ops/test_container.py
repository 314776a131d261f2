"""The container image, checked without a container engine: the Dockerfile's facts (stages,
non-root user, runtime-only final stage, health check, entrypoint) and compose.yaml's services,
against the real CLI."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import typer
from typer.core import TyperGroup

from tests.support.cli import ROOT


@dataclass
class Stage:
    """One build stage: its base, name and instructions (keyword, argument text)."""

    base: str
    name: str | None
    steps: list[tuple[str, str]] = field(default_factory=list)

    def args(self, keyword: str) -> list[str]:
        return [a for k, a in self.steps if k == keyword]


def parse_dockerfile(text: str) -> list[Stage]:
    """Stages of a Dockerfile: comments dropped, continuation lines joined."""
    joined = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")),
    )
    stages: list[Stage] = []
    for line in joined.splitlines():
        if not line.strip():
            continue
        keyword, _, rest = line.strip().partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        elif stages:
            stages[-1].steps.append((keyword, rest))
    return stages


def command_names() -> set[str]:
    """Top-level commands of the installed console script's app."""
    from bot.cli import app

    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return set(group.commands)


def test_dockerfile_builds_in_stages_and_runs_unprivileged_with_a_health_check() -> None:
    """Multi-stage on a slim Python; the final stage only copies the built venv (no pip, no
    build tools, no test extras), runs as a non-root user, checks /readyz on the health port,
    and starts `errand run` through ENTRYPOINT ["errand"]."""
    stages = parse_dockerfile((ROOT / "Dockerfile").read_text())
    build, final = stages[0], stages[-1]
    assert len(stages) >= 2
    assert all(
        re.fullmatch(r"python:[^ ]*-slim", s.base.replace("${PYTHON_VERSION}", "3")) for s in stages
    )
    assert any("pip wheel" in r for r in build.args("RUN"))

    assert [a for a in final.args("COPY") if "--from" in a] == [
        f"--from={build.name} /opt/errand /opt/errand"
    ]
    final_runs = " ".join(final.args("RUN"))
    assert "pip" not in final_runs
    assert "[test]" not in (ROOT / "Dockerfile").read_text()

    users = final.args("USER")
    assert len(users) == 1
    assert users[0].split(":")[0] not in {"root", "0"}
    keywords = [k for k, _ in final.steps]
    assert keywords.index("USER") < keywords.index("ENTRYPOINT")

    env = " ".join(final.args("ENV"))
    port = re.search(r"ERRAND_HEALTH_PORT=(\d+)", env)
    assert port is not None
    assert "ERRAND_HEALTH_HOST=0.0.0.0" in env
    assert final.args("EXPOSE") == [port[1]]
    [check] = final.args("HEALTHCHECK")
    probe = json.loads(check.split(" CMD ", 1)[1])
    assert probe[0] == "python"
    assert f"http://127.0.0.1:{port[1]}/readyz" in probe[-1]

    assert [json.loads(a) for a in final.args("ENTRYPOINT")] == [["errand"]]
    assert [json.loads(a) for a in final.args("CMD")] == [["run"]]
    assert "run" in command_names()


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_build() -> None:
    """Only the sources the build copies are sent; .env and the venvs are not."""
    lines = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"  # ignore everything, then allow what the build copies
    assert {"!jobs/", "!bot/", "!migrations/", "!pyproject.toml", ".env"} <= set(lines)


def test_compose_runs_postgres_one_bot_and_two_workers_with_real_commands() -> None:
    """compose.yaml has PostgreSQL, a bot and two worker replicas; their commands exist."""
    text = (ROOT / "compose.yaml").read_text()
    section = text.split("\nservices:\n", 1)[1].split("\nvolumes:\n", 1)[0]
    services = re.findall(r"^  ([a-z][a-z0-9_-]*):\s*$", section, re.MULTILINE)
    assert services == ["postgres", "bot", "worker"]
    commands = [json.loads(c) for c in re.findall(r"command: (\[.*\])", text)]
    assert commands == [["bot"], ["worker"]]
    assert {c[0] for c in commands} <= command_names()
    assert re.search(r"worker:\n(?:    .*\n)*?    deploy:\n      replicas: 2\n", text)
    assert re.search(r"^    image: postgres:\d+$", text, re.MULTILINE)
