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
import fcntl
import logging
import os
import shlex
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pydantic import SecretStr

from discord_emulator import Emulator, EmulatorConfig, User
from discord_emulator.persist import WorldFile
from discord_emulator.web import PageConfig, serve_page
from jobs import (
    Engine,
    HealthServer,
    Settings,
    Worker,
    default_catalog_path,
    get_logger,
    load_settings,
    open_engine,
    start_health,
    stop_on_signals,
    supervise,
    worker_check,
)

log = get_logger("sandbox")

GUILD_NAME = "Errand Sandbox"
VIEWERS = ("alice", "bob")
WORLD_FILE = "discord.json"


class SandboxError(RuntimeError):
    """The sandbox cannot start; the message says why and what to do."""


@dataclass
class SandboxWorld:
    """The parts of the emulated world the sandbox needs by name."""

    guild_id: int
    viewers: list[User]


def build_world(emu: Emulator) -> SandboxWorld:
    """A first start's world: the Errand application, a guild with ``#general`` and a
    ``#reports`` forum, two members (alice and bob) and their DMs with the bot."""
    emu.create_application("Errand")
    guild = emu.create_guild(GUILD_NAME)
    emu.create_channel(guild, "general", topic="Try /summon task:count to five")
    emu.create_forum(guild, "reports")
    viewers = []
    for name in VIEWERS:
        user = emu.create_user(name)
        emu.add_member(guild, user)
        emu.create_dm(user)
        viewers.append(user)
    return SandboxWorld(guild.id, viewers)


def find_world(emu: Emulator) -> SandboxWorld:
    """The sandbox's guild and viewers in a world loaded from disk.

    Raises:
        SandboxError: the world file is not one the sandbox wrote.
    """
    guild = next((g for g in emu.state.guilds.values() if g.name == GUILD_NAME), None)
    by_name = {u.username: u for u in emu.state.users.values() if not u.bot}
    if guild is None or emu.application is None or any(n not in by_name for n in VIEWERS):
        raise SandboxError("the saved Discord world is not a sandbox's; use another --data-dir")
    return SandboxWorld(guild.id, [by_name[n] for n in VIEWERS])


def example_catalog() -> Path | None:
    """The example command catalog: the checkout's, else the copy shipped in the wheel."""
    checkout = default_catalog_path()
    if checkout.exists():
        return checkout
    shipped = resources.files("bot").joinpath("_examples", "commands.toml")
    return Path(str(shipped)) if shipped.is_file() else None


def sandbox_settings(data_dir: Path) -> Settings:
    """Engine settings rooted in the sandbox's data directory (a set ``DATABASE_URL`` wins)."""
    if not os.environ.get("ERRAND_COMMAND_CATALOG"):
        catalog = example_catalog()
        if catalog is not None:
            # Read by the command kind's own settings, in this process.
            os.environ["ERRAND_COMMAND_CATALOG"] = str(catalog)
    settings = Settings()
    settings.data_dir = data_dir
    if settings.db.url is None:
        settings.db.data_dir = data_dir / "pgdata"
    # Ctrl-C should feel prompt; running jobs are released and resume on the next start.
    settings.worker.shutdown_grace_seconds = min(settings.worker.shutdown_grace_seconds, 3.0)
    return settings


def cli_hint(settings: Settings) -> str:
    """The exact ``errand job`` command line that reaches this sandbox's database."""
    if settings.db.url is not None:
        return "errand job list (with the same DATABASE_URL)"
    assert settings.db.data_dir is not None
    return f"ERRAND_DB_DATA_DIR={shlex.quote(str(settings.db.data_dir))} errand job list"


@asynccontextmanager
async def running_emulator(data_dir: Path, host: str, port: int) -> AsyncIterator[Emulator]:
    """The emulator with its world loaded from (and saved to) ``data_dir``, serving the page."""
    emu = Emulator(EmulatorConfig(host=host, port=port))
    world_file = WorldFile(emu, data_dir / WORLD_FILE)
    try:
        loaded = world_file.load()
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(f"cannot read {world_file.path} ({exc}); move it away") from exc
    world = find_world(emu) if loaded else build_world(emu)
    serve_page(emu, PageConfig(viewers=[u.id for u in world.viewers], title=GUILD_NAME))
    try:
        await emu.start()
    except OSError as exc:
        raise SandboxError(f"cannot serve on {host}:{port} ({exc.strerror}); try --port") from exc
    try:
        await world_file.start()
        try:
            yield emu
        finally:
            await world_file.stop()
    finally:
        await emu.stop()


async def run_bot(
    emu: Emulator, engine: Engine, stop: asyncio.Event, health: HealthServer | None = None
) -> None:
    """Run the Errand bot against ``emu`` until ``stop`` is set (its gateway check on
    ``health``)."""
    from bot.run import run_bot as run
    from bot.settings import BotSettings

    assert emu.application is not None
    bot_settings = BotSettings(
        token=SecretStr(emu.application.token),
        # Global commands: usable in the sandbox guild and in DMs (the emulator has no
        # propagation delay for global commands).
        dev_guild=None,
        api_base=emu.api_base,
        gateway_url=emu.gateway_url,
        guild_ready_timeout=0.1,
    )
    await run(bot_settings, stop, engine=engine, health=health)


async def run_sandbox(
    data_dir: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    stop: asyncio.Event,
    hard: asyncio.Event | None = None,
) -> None:
    """Run emulator, page, engine, worker and bot until ``stop`` is set (``hard``: stop running
    jobs at once instead of giving them the shutdown grace)."""
    settings = sandbox_settings(data_dir)
    async with (
        running_emulator(data_dir, host, port) as emu,
        open_engine(settings, pool_max=settings.db.pool_max) as engine,
    ):
        worker = Worker(
            engine.store,
            engine.registry,
            settings.worker,
            dsn=engine.dsn,
            assets_dir=settings.assets_dir,
        )
        # /healthz, /readyz and /metrics like every long-running process (ERRAND_HEALTH_PORT).
        health = await start_health(
            settings.health,
            engine.pool,
            kinds=engine.registry.names(),
            checks={"worker": worker_check(worker, stop)},
        )
        tasks = [
            asyncio.create_task(worker.run(stop, hard), name="sandbox-worker"),
            asyncio.create_task(run_bot(emu, engine, stop, health), name="sandbox-bot"),
        ]
        print(
            f"Errand sandbox: open {emu.base_url}/ (data: {data_dir}; Ctrl-C to stop)",
            flush=True,
        )
        print(f"Errand sandbox: its jobs from another terminal: {cli_hint(settings)}", flush=True)
        try:
            await supervise(tasks, stop)  # a part that died raises here: stop the rest
        finally:
            stop.set()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException) and not isinstance(
                    result, asyncio.CancelledError
                ):
                    log.error("sandbox.part_failed", error=repr(result))
            if health is not None:
                await health.stop()


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


def main(data_dir: Path | None, host: str, port: int) -> None:
    """Run the sandbox in the foreground until SIGINT/SIGTERM."""
    settings = load_settings(quiet=True)
    # discord.py warns that voice support is missing; the sandbox has no voice.
    logging.getLogger("discord.client").setLevel(logging.ERROR)
    root = (data_dir or settings.data_dir / "sandbox").expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)

    async def go() -> None:
        def announce(hard: bool) -> None:
            text = "stopping now" if hard else "stopping (Ctrl-C again to force)"
            print(f"Errand sandbox: {text}", file=sys.stderr, flush=True)

        stop, hard = stop_on_signals(announce)
        await run_sandbox(root, host=host, port=port, stop=stop, hard=hard)

    try:
        with exclusive(root), contextlib.suppress(KeyboardInterrupt):
            asyncio.run(go())
    except SandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
