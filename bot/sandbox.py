"""``errand sandbox``: the whole of Errand in one process against a local Discord, with a chat page.

One command starts embedded PostgreSQL, the Discord emulator (serving the chat page on the same
port), the bot and a worker, all in one data directory (``<ERRAND_DATA_DIR>/sandbox`` unless
``--data-dir``):

* ``pgdata/`` — the embedded database: jobs survive a restart of the sandbox;
* ``discord.json`` — the emulator's world (guild, channels, threads, users, every version of
  every message, registered commands, the bot token), so the page shows the same history and the
  bot's stored message ids stay valid after a restart;
* ``assets/`` — large job assets.

Nothing needs configuring: ``/summon`` runs the ``demo`` kind (``agent`` when model settings
are present), and the ``command`` kind uses the example catalog shipped with Errand unless
``ERRAND_COMMAND_CATALOG`` is set. Ctrl-C (or SIGTERM) stops everything cleanly; a second one
stops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import shlex
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.errors import SandboxError
from discord_emulator import Emulator, EmulatorConfig, User
from discord_emulator.persist import WorldFile
from discord_emulator.web import PageConfig, serve_page
from jobs.transport import Process, Settings, State, UnknownJob, read_id

GUILD_NAME = "Errand Sandbox"
VIEWERS = ("alice", "bob", "operator")
# Members with this role are the bot's operators (BotSettings.admin_role): they may cancel any
# job and resolve `unknown` ones.
OPERATOR_ROLE = "Errand operators"
OPERATORS = ("operator",)
WORLD_FILE = "discord.json"
# How often threads inactive for their auto-archive duration are archived (Discord does it
# on its own; the emulator does it when its clock moves).
ARCHIVE_SWEEP_SECONDS = 60.0
CANCEL_STATES = frozenset({State.CANCELLING, State.CANCELLED})
# The local Discord's gateway heartbeat interval is Discord's own (41.25 s) unless this is set;
# a test that watches an idle sandbox through its first heartbeat shortens it.
HEARTBEAT_ENV = "ERRAND_SANDBOX_HEARTBEAT_INTERVAL_MS"


@dataclass
class SandboxWorld:
    """The parts of the emulated world the sandbox needs by name."""

    guild_id: int
    viewers: list[User]


def build_world(emu: Emulator) -> SandboxWorld:
    """A first start's world: the Errand application, a guild with ``#general`` and a
    ``#reports`` forum, three members (alice, bob, and ``operator`` with the operators' role)
    and their DMs with the bot."""
    emu.create_application("Errand")
    guild = emu.create_guild(GUILD_NAME)
    emu.create_channel(guild, "general", topic="Try /summon task:count to five")
    emu.create_forum(guild, "reports")
    return SandboxWorld(guild.id, [_add_viewer(emu, guild.id, name) for name in VIEWERS])


def _add_viewer(emu: Emulator, guild_id: int, name: str) -> User:
    user = emu.create_user(name)
    roles = []
    if name in OPERATORS:
        guild = emu.state.guilds[guild_id]
        role = next((r for r in guild.roles.values() if r.name == OPERATOR_ROLE), None)
        roles.append(role or emu.create_role(guild_id, OPERATOR_ROLE))
    emu.add_member(guild_id, user, roles=roles)
    emu.create_dm(user)
    return user


def find_world(emu: Emulator) -> SandboxWorld:
    """The sandbox's guild and viewers in a world loaded from disk (viewers added since the
    world was saved, such as ``operator``, are added to it).

    Raises:
        SandboxError: the world file is not one the sandbox wrote.
    """
    guild = next((g for g in emu.state.guilds.values() if g.name == GUILD_NAME), None)
    by_name = {u.username: u for u in emu.state.users.values() if not u.bot}
    if guild is None or emu.application is None or any(n not in by_name for n in VIEWERS[:2]):
        raise SandboxError("the saved Discord world is not a sandbox's; use another --data-dir")
    for name in VIEWERS:
        if name not in by_name:
            by_name[name] = _add_viewer(emu, guild.id, name)
    return SandboxWorld(guild.id, [by_name[n] for n in VIEWERS])


def example_catalog() -> Path | None:
    """The example command catalog: the checkout's (``examples/`` beside ``bot/``), else the
    copy shipped in the wheel."""
    checkout = Path(__file__).resolve().parents[1] / "examples" / "commands.toml"
    if checkout.exists():
        return checkout
    shipped = resources.files("bot").joinpath("_examples", "commands.toml")
    return Path(str(shipped)) if shipped.is_file() else None


def root_sandbox(settings: Settings, data_dir: Path) -> None:
    """Root the engine's settings in the sandbox's data directory (a set ``DATABASE_URL``
    wins), with the example command catalog unless ``ERRAND_COMMAND_CATALOG`` is set."""
    if not os.environ.get("ERRAND_COMMAND_CATALOG"):
        catalog = example_catalog()
        if catalog is not None:
            # Read by the command kind's own settings, in this process.
            os.environ["ERRAND_COMMAND_CATALOG"] = str(catalog)
    settings.data_dir = data_dir
    if settings.db.url is None:
        settings.db.data_dir = data_dir / "pgdata"
    # Ctrl-C should feel prompt; running jobs are released and resume on the next start.
    settings.worker.shutdown_grace_seconds = min(settings.worker.shutdown_grace_seconds, 3.0)


def heartbeat_interval_ms() -> int:
    """The HELLO heartbeat interval the local Discord gives the bot (``HEARTBEAT_ENV``).

    Raises:
        SandboxError: the variable is set to something other than a positive whole number.
    """
    raw = os.environ.get(HEARTBEAT_ENV, "").strip()
    if not raw:
        return EmulatorConfig.heartbeat_interval_ms
    try:
        interval = int(raw)
    except ValueError:
        interval = 0
    if interval <= 0:
        raise SandboxError(
            f"{HEARTBEAT_ENV} must be a positive number of milliseconds, not {raw!r}"
        )
    return interval


def cli_hint(settings: Settings) -> str:
    """The exact ``errand job`` command line that reaches this sandbox's database."""
    if settings.db.url is not None:
        return "errand job list (with the same DATABASE_URL)"
    assert settings.db.data_dir is not None
    return f"ERRAND_DB_DATA_DIR={shlex.quote(str(settings.db.data_dir))} errand job list"


class PageJobs:
    """What the page shows of a job (its state chip and its timeline), read from the engine
    with the bot's visibility rule: a guild's jobs to its members, a DM's to that user."""

    def __init__(self) -> None:
        # Set once each is running: the emulator starts first, then the process's engine.
        self.emu: Emulator | None = None
        self.process: Process | None = None

    async def __call__(self, public_id: str, user_id: int) -> dict[str, Any] | None:
        if self.process is None or self.emu is None:
            return None
        try:
            status = await self.process.engine.store.status(public_id)
        except UnknownJob:
            return None
        job = status.job
        group = job.origin_group or ""
        if job.origin.get("transport") != "discord":
            return None
        if group.startswith("dm:"):
            if group != f"dm:{user_id}":
                return None
        elif not group.isdigit() or self.emu.state.member(int(group), user_id) is None:
            return None
        events = []
        for e in status.events:
            data = e.data if isinstance(e.data, dict) else {}
            # Who: a resolve records its person; a requester is the job's; a cancel's person is
            # the job's cancel_requested_by.
            by = data.get("by")
            if not by and e.actor == "requester":
                by = job.requester
            elif not by and e.actor == "operator" and e.to_state in CANCEL_STATES:
                by = job.cancel_requested_by
            events.append(
                {
                    "at": e.at.isoformat(),
                    "from": e.from_state.value if e.from_state else None,
                    "to": e.to_state.value,
                    "actor": e.actor,
                    "by": by,
                    "reason": e.reason,
                    "ignored": e.ignored,
                }
            )
        return {
            "id": job.public_id,
            "kind": job.kind,
            "state": job.state.value,
            "finished": job.state.terminal,
            "task": str(job.origin.get("task") or ""),
            "progress": job.progress,
            "events": events,
        }


def page_config(world: SandboxWorld, jobs: PageJobs) -> PageConfig:
    """The page: the sandbox's viewers and job timelines (job ids in code are links)."""
    return PageConfig(
        viewers=[u.id for u in world.viewers],
        title=GUILD_NAME,
        jobs=jobs,
        job_id_pattern=read_id.pattern,
    )


@asynccontextmanager
async def running_emulator(
    data_dir: Path, host: str, port: int, jobs: PageJobs | None = None
) -> AsyncIterator[Emulator]:
    """The emulator with its world loaded from (and saved to) ``data_dir``, serving the page."""
    emu = Emulator(
        EmulatorConfig(host=host, port=port, heartbeat_interval_ms=heartbeat_interval_ms())
    )
    world_file = WorldFile(emu, data_dir / WORLD_FILE)
    try:
        loaded = world_file.load()
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(f"cannot read {world_file.path} ({exc}); move it away") from exc
    world = find_world(emu) if loaded else build_world(emu)
    if jobs is not None:
        jobs.emu = emu
    serve_page(emu, page_config(world, jobs or PageJobs()))
    try:
        await emu.start()
    except OSError as exc:  # taken since check_address looked
        raise address_error(host, port, exc) from exc
    try:
        await world_file.start()
        try:
            yield emu
        finally:
            await world_file.stop()
    finally:
        await emu.stop()


def sandbox_bot(emu: Emulator) -> tuple[Callable[[Process], Awaitable[None]], str]:
    """Errand's bot, as a part of the sandbox's process, logged in to ``emu``, and its token."""
    from bot.run import bot_part, token_of
    from bot.settings import BotSettings

    assert emu.application is not None
    bot_settings = BotSettings(
        token=SecretStr(emu.application.token),
        # Global commands: usable in the sandbox guild and in DMs (the emulator has no
        # propagation delay for global commands).
        dev_guild=None,
        admin_role=OPERATOR_ROLE,
        api_base=emu.api_base,
        gateway_url=emu.gateway_url,
        guild_ready_timeout=0.1,
    )
    token = token_of(bot_settings)
    return bot_part(bot_settings, token), token


def sandbox_page(emu: Emulator, jobs: PageJobs) -> Callable[[Process], Awaitable[None]]:
    """The page's part of the sandbox's process: it reads jobs from the process's engine, says
    where to look, and archives idle threads until the process stops."""

    def start(process: Process) -> Awaitable[None]:
        jobs.process = process
        data = process.settings.data_dir
        print(f"Errand sandbox: open {emu.base_url}/ (data: {data}; Ctrl-C to stop)", flush=True)
        hint = cli_hint(process.settings)
        print(f"Errand sandbox: its jobs from another terminal: {hint}", flush=True)
        return archive_threads(emu, process.stop)

    return start


async def run_sandbox(process: Process, host: str = "127.0.0.1", port: int = 8765) -> int:
    """Run the emulator and its page around ``process`` (an engine, a worker, the bot) until
    the process stops; the exit code."""
    jobs = PageJobs()
    async with running_emulator(process.settings.data_dir, host, port, jobs) as emu:
        bot, token = sandbox_bot(emu)
        process.parts = {"bot": bot, "page": sandbox_page(emu, jobs)}
        process.secrets.append(token)  # the local Discord's token, masked as a real one is
        return await process.serve()


async def archive_threads(emu: Emulator, stop: asyncio.Event) -> None:
    """Archive threads as Discord does, after their auto-archive duration without activity
    (the emulator archives when its clock moves; here it moves with the wall clock)."""
    while True:
        emu.advance(0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), ARCHIVE_SWEEP_SECONDS)
        if stop.is_set():
            return


@contextlib.contextmanager
def exclusive(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's lock: two sandboxes on one directory would share a database
    but each save its own Discord world over the other's.

    Raises:
        SandboxError: another sandbox holds the lock.
    """
    with (data_dir / "sandbox.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SandboxError(
                f"another errand sandbox is running on {data_dir}; stop it or use --data-dir"
            ) from None
        yield


def address_error(host: str, port: int, exc: OSError) -> SandboxError:
    """Why the page cannot be served on ``host:port``, with the option to change."""
    if exc.errno == errno.EADDRINUSE:
        return SandboxError(f"port {port} on {host} is in use (another sandbox?); try --port")
    why = exc.strerror or str(exc)
    return SandboxError(
        f"cannot serve on {host} ({why.lower()}); --host must be an address of this machine, "
        "e.g. 127.0.0.1"
    )


def check_address(host: str, port: int) -> None:
    """Refuse an address the page could not be served on before anything starts (a host that
    does not resolve or is not this machine's, a port in use): one line, not a traceback after
    PostgreSQL has started.

    Raises:
        SandboxError: the address cannot be used (the message names the option to change).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError):
        raise SandboxError(
            f"cannot serve on {host!r} (not a host name or address); --host must be an "
            "address of this machine, e.g. 127.0.0.1"
        ) from None
    with socket.socket(family, kind, proto) as probe:
        # As the page's server binds it (aiohttp sets SO_REUSEADDR): a port left in TIME_WAIT
        # by the last run counts as free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise address_error(host, port, exc) from None


def main(data_dir: Path | None, host: str, port: int) -> int:
    """Run the sandbox in the foreground until SIGINT/SIGTERM; the exit code.

    Raises:
        SandboxError: the sandbox cannot start (the message says why).
    """

    def announce(hard: bool) -> None:
        text = "stopping now" if hard else "stopping (Ctrl-C again to force)"
        print(f"Errand sandbox: {text}", file=sys.stderr, flush=True)

    check_address(host, port)
    process = Process(worker=True, announce=announce, quiet=True)
    # discord.py warns that voice support is missing; the sandbox has no voice.
    logging.getLogger("discord.client").setLevel(logging.ERROR)
    root = (data_dir or process.settings.data_dir / "sandbox").expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    root_sandbox(process.settings, root)
    with exclusive(root), contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(run_sandbox(process, host, port))
    return 0
