"""What every control operation stands on: the world's users and the application the emulator
serves (the first is created on first use), and how a change to a guild reaches the bot."""

from __future__ import annotations

from typing import Any

from discord_emulator.hub import Hub
from discord_emulator.models import Application, Guild, User, make_token


class ControlBase(Hub):
    """The control operations, written against :class:`~discord_emulator.hub.Hub` (the state,
    clock, gateway, actions and faults the emulator that mixes them in provides)."""

    def __init__(self) -> None:
        self.application: Application | None = None

    def create_user(
        self, username: str, *, bot: bool = False, global_name: str | None = None
    ) -> User:
        user = User(id=self.state.new_id(), username=username, bot=bot, global_name=global_name)
        self.state.users[user.id] = user
        return user

    def create_application(
        self,
        name: str = "Errand",
        *,
        token: str | None = None,
        privileged_intents: bool | int = True,
    ) -> Application:
        """A bot application (bot user, owner, token); the first is ``emu.application``.
        ``privileged_intents``: those switched on in its developer portal, all (True), none
        (False) or some (a mask of :mod:`discord_emulator.intents` bits)."""
        owner = self.create_user(f"{name.lower()}-owner")
        bot = self.create_user(name, bot=True)
        app = Application(
            id=self.state.new_id(),
            name=name,
            bot_user_id=bot.id,
            owner_id=owner.id,
            token=token or make_token(bot.id),
            privileged_intents=privileged_intents,
        )
        self.state.applications[app.id] = app
        if self.application is None:
            self.application = app
        return app

    def _app(self) -> Application:
        if self.application is None:
            self.create_application()
        assert self.application is not None
        return self.application

    @property
    def bot_user(self) -> User:
        return self.state.users[self._app().bot_user_id]

    def _guild_changed(self, guild: Guild, event: str, data: dict[str, Any]) -> None:
        self.gateway.dispatch(event, data, guild_id=guild.id)
        self.actions.publish(event.lower(), data, guild_id=guild.id)
