"""Run the emulator as a standalone local Discord: ``python -m discord_emulator --port 8790``.

It creates a bot application (token printed, or fixed with ``--token``), a guild with a
``#general`` text channel, a ``#reports`` forum and a user ``alice``, then serves until
interrupted. Point a bot at it by setting ``Route.BASE``/``DEFAULT_GATEWAY`` (see
``discord_emulator.patched``) and drive it through ``/_emulator/``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json

from .server import Emulator, EmulatorConfig
from .testing import make_world


async def serve(args: argparse.Namespace) -> None:
    emu = Emulator(EmulatorConfig(host=args.host, port=args.port))
    emu.create_application(args.name, token=args.token)
    world = make_world(emu)
    forum = emu.create_forum(world.guild, "reports")
    await emu.start()
    assert emu.application is not None
    print(
        json.dumps(
            {
                "api_base": emu.api_base,
                "gateway_url": emu.gateway_url,
                "control": f"{emu.base_url}/_emulator/",
                "token": emu.application.token,
                "application_id": str(emu.application.id),
                "guild_id": str(world.guild.id),
                "channel_id": str(world.channel.id),
                "forum_id": str(forum.id),
                "user_id": str(world.alice.id),
            },
            indent=2,
        ),
        flush=True,
    )
    try:
        await asyncio.Event().wait()
    finally:
        await emu.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="A local Discord for discord.py bots")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--name", default="Errand", help="bot application name")
    parser.add_argument("--token", default=None, help="fixed bot token (default: random)")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args))


if __name__ == "__main__":
    main()
