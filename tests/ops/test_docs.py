"""docs/deploy.md and docs/runbook.md match the code: every ``errand ...`` command they show
exists in the real app, with every option they pass, and every metric they name is in a real
process's scrape."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import pytest
import typer
from typer.core import TyperGroup

from discord_emulator import Emulator
from discord_emulator.testing import World
from tests.support.cli import ROOT, WorkerProc, discord_env
from tests.support.http import http_get
from tests.support.polling import poll

DOCS = ["docs/deploy.md", "docs/runbook.md"]
_WORD = re.compile(r"^[a-z][a-z0-9-]*$")


def mentions(markdown: str) -> list[list[str]]:
    """The words after each ``errand`` in the document's code blocks and code spans."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", markdown, re.DOTALL)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", markdown, flags=re.DOTALL))
    found: list[list[str]] = []
    for snippet in [*blocks, *spans]:
        for line in snippet.splitlines():
            line = line.split(" #", 1)[0]
            for match in re.finditer(r"(?:^|[\s(])errand((?: +[^\s|;&`()]+)*)", line):
                words = match[1].split()
                if words and (_WORD.match(words[0]) or words[0].startswith("--")):
                    found.append(words)
    return found


def check(words: list[str]) -> str | None:
    """None when ``errand WORDS`` names a real command with real options, else why not."""
    from bot.cli import app

    command = typer.main.get_command(app)
    path = ["errand"]
    for word in words:
        if word.startswith("-"):
            name = word.split("=", 1)[0]
            known = {"--help"} | {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
            if name not in known:
                return f"{' '.join(path)} has no option {name}"
        elif isinstance(command, TyperGroup):
            if not _WORD.match(word):
                break  # a placeholder such as `errand job ...`
            sub = command.commands.get(word)
            if sub is None:
                return f"{' '.join(path)} has no command {word}"
            command, path = sub, [*path, word]
    return None


@pytest.mark.parametrize("doc", DOCS)
def test_every_errand_command_in_the_doc_exists(doc: str) -> None:
    """Each `errand ...` the document shows is a command of the real CLI, options included."""
    found = mentions((ROOT / doc).read_text())
    assert len(found) >= 10  # the extraction works
    problems = sorted({p for words in found if (p := check(words))})
    assert problems == []


def test_the_check_catches_a_command_or_option_that_does_not_exist() -> None:
    """The checker refuses what the CLI lacks, so the doc test can fail."""
    assert check(["job", "explode"]) == "errand job has no command explode"
    assert check(["prune", "--everything"]) == "errand prune has no option --everything"
    assert check(["job", "cancel", "ID", "--force"]) is None
    assert mentions("run `errand outbox retry --all-dead` or\n```sh\nerrand job show X\n```") == [
        ["job", "show", "X"],
        ["outbox", "retry", "--all-dead"],
    ]


def test_the_metric_table_lists_exactly_what_errand_exports() -> None:
    """Every errand_* metric in docs/deploy.md's table is exported, and every exported one is
    in the table."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    import bot.metrics  # noqa: F401  (the bot's metrics register on the same registry)
    from jobs.engine.admin import Gauges
    from jobs.ops import metrics

    collector = metrics.DatabaseCollector(["noop"])
    collector.snapshot = Gauges(up=True)
    db = CollectorRegistry(auto_describe=False)
    db.register(collector)
    text = (generate_latest(metrics.REGISTRY) + generate_latest(db)).decode()
    exported = {
        f.name + ("_total" if f.type == "counter" else "")
        for f in text_string_to_metric_families(text)
        if f.name.startswith("errand_")
    }
    documented = set(
        re.findall(
            r"^\| `(errand_[a-z_]+)` \|", (ROOT / "docs/deploy.md").read_text(), re.MULTILINE
        )
    )
    assert documented == exported


# -- docs/architecture.md --------------------------------------------------------------------

_PATH = re.compile(r"^(?:jobs|bot|discord_emulator|migrations|tests|docs)(?:/[A-Za-z0-9_.*-]+)*/?$")
_DOTTED = re.compile(r"^(?:jobs|bot|discord_emulator)(?:\.[a-z_][a-z0-9_]*)+$")


def named_paths(markdown: str) -> list[str]:
    """Every file, folder or module the document names in a code span: ``jobs/engine/store.py``,
    ``jobs/engine/sql/*.sql``, ``tests/e2e/`` or ``jobs.engine.store``."""
    spans = re.findall(r"`([^`\n]+)`", markdown)
    return [s for s in spans if ("/" in s and _PATH.match(s)) or _DOTTED.match(s)]


def missing(name: str) -> str | None:
    """None when the named path or module exists in the repository, else the name."""
    if _DOTTED.match(name):
        base = ROOT / name.replace(".", "/")
        found = base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()
        return None if found else name
    if "NNNN" in name:  # a placeholder for a new file: its folder must exist
        return None if (ROOT / name).parent.is_dir() else name
    if "*" in name:
        return None if list(ROOT.glob(name)) else name
    return None if (ROOT / name).exists() else name


def test_every_module_the_architecture_doc_names_exists() -> None:
    """docs/architecture.md names no file, folder or module that is not there (it is the map
    a newcomer trusts)."""
    names = named_paths((ROOT / "docs/architecture.md").read_text())
    assert len(names) >= 40  # the extraction works
    assert {"jobs/engine/store/", "bot/commands/", "jobs/engine/sql/*.sql"} <= set(names)
    assert sorted({m for n in names if (m := missing(n))}) == []


def test_the_path_check_catches_a_module_that_does_not_exist() -> None:
    doc = "see `jobs/engine/nothing.py`, `jobs.runtime.gone`, `bot/sql/*.nosql`, `jobs/ops/`"
    assert sorted(m for n in named_paths(doc) if (m := missing(n))) == [
        "bot/sql/*.nosql",
        "jobs.runtime.gone",
        "jobs/engine/nothing.py",
    ]


async def test_every_metric_the_docs_name_is_in_a_real_scrape(
    emu: Emulator, world: World, spawn_errand: Callable[..., Awaitable[WorkerProc]]
) -> None:
    """Every ``errand_*`` name in docs/deploy.md and docs/runbook.md is a metric family that a
    running ``errand run`` (bot and worker) exposes on /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    named = set()
    for doc in DOCS:
        named |= set(re.findall(r"\b(errand_[a-z_]+[a-z])\b", (ROOT / doc).read_text()))
    assert len(named) >= 15  # the extraction works
    proc = await spawn_errand("run", **discord_env(emu))

    async def ready() -> bool:
        return (await http_get(proc.port, "/readyz"))[0] == 200

    await poll(ready, within=30)
    status, text = await http_get(proc.port, "/metrics")
    scraped = {
        f.name + ("_total" if f.type == "counter" else "")
        for f in text_string_to_metric_families(text)
    }
    assert status == 200
    assert sorted(named - scraped) == []


SUMMON = re.compile(r"/summon task:[^`]*?params:[a-z_]+=[^`]*")


def test_every_summon_example_names_its_kind_and_its_params_fit_it() -> None:
    """A newcomer copies the docs' examples: each ``/summon ... params:`` names its kind (the
    default kind is agent once a model is configured, and its params are not demo's), and its
    params are valid for that kind (issue #32, item 5)."""
    from bot.commands.summon import summon_params
    from jobs.kinds import default_registry

    registry = default_registry()
    found = []
    for doc in ["README.md", *(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]:
        for example in SUMMON.findall((ROOT / doc).read_text()):
            found.append(example)
            kind = re.search(r" kind:(\S+)", example)
            assert kind, f"{doc}: {example!r} names no kind"
            params = example.split("params:", 1)[1].strip()
            registry.get(kind[1]).validate(summon_params(params))
    assert len(found) >= 3, found


def test_the_runbook_says_what_a_stopped_command_ends_as() -> None:
    """docs/runbook.md said every stopped job that is not retry-safe ends ``unknown``; a
    ``command`` whose catalog entry is not retry-safe ends ``failed``, in the words of its own
    reason (tests/integration/test_command_escapes.py stops one and reads it), as
    docs/cancellation.md says (issue #32, item 19)."""

    def words(path: str) -> str:
        return " ".join((ROOT / path).read_text().split())

    reason = "stopped before it finished (worker shutdown); it is not retry-safe"
    assert reason in words("tests/integration/test_command_escapes.py")  # what the job says
    runbook = words("docs/runbook.md")
    assert reason in runbook
    assert "a `command` whose catalog entry is not retry-safe" in runbook
    assert "ends `failed`" in runbook
    assert "any other ends `unknown`" not in runbook
    assert "A `command` that is not retry-safe, stopped this way, ends `failed`" in words(
        "docs/cancellation.md"
    )
