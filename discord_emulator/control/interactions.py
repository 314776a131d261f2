"""Acting as a user's Discord client: slash, user and message commands, autocomplete, clicks
and modal submits, each refused where Discord's client would send nothing; and the
:class:`InteractionHandle` a test holds afterwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from discord_emulator import permissions as P
from discord_emulator.component_input import modal_inputs, modal_submission, pick
from discord_emulator.interaction_builder import (
    APPLICATION_COMMAND,
    AUTOCOMPLETE,
    MESSAGE_COMMAND,
    MESSAGE_COMPONENT,
    MODAL_SUBMIT,
    USER_COMMAND,
    InteractionBuilder,
    InteractionRefused,
    Ref,
    find_component,
    ref_id,
)
from discord_emulator.models import FLAG_LOADING, Channel, Interaction, Message

from .reading import ReadingControl


class InteractionHandle:
    """What a test holds after invoking a command or clicking a component."""

    def __init__(self, emu: ReadingControl, interaction: Interaction) -> None:
        self.emu = emu
        self.interaction = interaction

    @property
    def id(self) -> int:
        return self.interaction.id

    @property
    def token(self) -> str:
        return self.interaction.token

    @property
    def response_type(self) -> int | None:
        return self.interaction.response_type

    @property
    def original(self) -> Message | None:
        mid = self.interaction.original_message_id
        return self.emu.state.messages.get(mid) if mid is not None else None

    @property
    def followups(self) -> list[Message]:
        return [self.emu.state.messages[m] for m in self.interaction.followup_ids]

    @property
    def choices(self) -> list[dict[str, Any]] | None:
        return self.interaction.autocomplete_choices

    async def wait_response(self, timeout: float = 5.0) -> InteractionHandle:  # noqa: ASYNC109
        """Wait for the initial response (any type)."""
        await self.emu.wait_until(lambda: self.interaction.response_type is not None, timeout)
        return self

    async def wait_original(
        self,
        predicate: Callable[[Message], bool] | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> Message:
        """Wait until the original response message exists, is not loading and matches."""

        def check() -> Message | None:
            msg = self.original
            if msg is None or msg.flags & FLAG_LOADING:
                return None
            return msg if predicate is None or predicate(msg) else None

        return await self.emu.wait_until(check, timeout)

    async def wait_followups(self, count: int = 1, timeout: float = 5.0) -> list[Message]:  # noqa: ASYNC109
        await self.emu.wait_until(lambda: len(self.interaction.followup_ids) >= count, timeout)
        return self.followups

    async def wait_choices(self, timeout: float = 5.0) -> list[dict[str, Any]]:  # noqa: ASYNC109
        return await self.emu.wait_until(lambda: self.interaction.autocomplete_choices, timeout)


class InteractionControl(ReadingControl):
    def _builder(self) -> InteractionBuilder:
        return InteractionBuilder(self.state, self._app())

    def _dispatch_interaction(
        self,
        itype: int,
        user: Ref,
        channel: Ref,
        data: dict[str, Any],
        message: Message | None = None,
    ) -> InteractionHandle:
        """Store a new interaction and send INTERACTION_CREATE to the bot."""
        builder = self._builder()
        ch = self.state.channels[ref_id(channel)]
        inter = builder.new_interaction(
            itype, ref_id(user), ch, data, now=self.clock.time(), message=message
        )
        payload = builder.payload(inter, message)
        self.state.interactions[inter.id] = inter
        self.state.interactions_by_token[inter.token] = inter
        self.gateway.dispatch("INTERACTION_CREATE", payload, application_id=builder.app.id)
        self.actions.publish("interaction_create", payload, interaction_id=inter.id)
        return InteractionHandle(self, inter)

    async def invoke_slash(
        self, user: Ref, channel: Ref, command: str, options: dict[str, Any] | None = None
    ) -> InteractionHandle:
        """Run ``/command sub ... opt:value`` as ``user`` in ``channel``, e.g.
        ``await emu.invoke_slash(alice, chan, "job status", {"id": "X"})``."""
        ch = self.state.channels[ref_id(channel)]
        _refuse_in_archived_thread(ch)
        builder = self._builder()
        builder.check_command_permission(ref_id(user), ch, command.strip().lstrip("/").split()[0])
        data = builder.command_data(command, options, ch, None)
        return self._dispatch_interaction(APPLICATION_COMMAND, user, ch, data)

    async def invoke_user_command(
        self, user: Ref, channel: Ref, command: str, target: Ref
    ) -> InteractionHandle:
        """Run the user command (context menu: Apps) ``command`` on ``target`` as ``user``,
        e.g. ``await emu.invoke_user_command(alice, chan, "Show Join Date", bob)``."""
        ch = self.state.channels[ref_id(channel)]
        _refuse_in_archived_thread(ch)
        uid = ref_id(user)
        builder = self._builder()
        builder.check_command_permission(uid, ch, command, USER_COMMAND)
        needed = P.SEND_MESSAGES_IN_THREADS if ch.is_thread else P.SEND_MESSAGES
        if ch.guild_id is not None and not P.has(
            P.channel_permissions(self.state, ch, uid), needed
        ):
            # "A user must have permission to send text messages in the channel they invoke a
            # user command in" (Application Commands: User Commands); the client says
            # Permission Denied and sends nothing.
            raise InteractionRefused(f"the user may not send messages in {ch.id}")
        target_user = self.state.users[ref_id(target)]
        data = builder.context_menu_data(command, USER_COMMAND, target_user, ch)
        return self._dispatch_interaction(APPLICATION_COMMAND, uid, ch, data)

    async def invoke_message_command(
        self, user: Ref, message: Ref, command: str
    ) -> InteractionHandle:
        """Run the message command (context menu: Apps) ``command`` on ``message`` as
        ``user``, in the message's channel."""
        msg = self.state.messages[ref_id(message)]
        if msg.deleted or msg.ephemeral:
            raise LookupError(f"message {msg.id} is not in its channel for {ref_id(user)}")
        ch = self.state.channels[msg.channel_id]
        _refuse_in_archived_thread(ch)
        builder = self._builder()
        builder.check_command_permission(ref_id(user), ch, command, MESSAGE_COMMAND)
        data = builder.context_menu_data(command, MESSAGE_COMMAND, msg, ch)
        return self._dispatch_interaction(APPLICATION_COMMAND, user, ch, data)

    async def autocomplete(
        self, user: Ref, channel: Ref, command: str, options: dict[str, Any], focused: str
    ) -> InteractionHandle:
        """Autocomplete (interaction type 4) with ``focused`` being typed; ``await
        handle.wait_choices()`` returns the bot's choices."""
        ch = self.state.channels[ref_id(channel)]
        _refuse_in_archived_thread(ch)
        data = self._builder().command_data(command, options, ch, focused)
        return self._dispatch_interaction(AUTOCOMPLETE, user, ch, data)

    async def click(
        self, user: Ref, message: Ref, custom_id: str, *, values: list[Any] | None = None
    ) -> InteractionHandle:
        """Click a button, or choose ``values`` in a select menu on a message: option values
        for a string select, users, roles or channels (or their ids) for the others. Choices
        the menu would not offer raise :class:`InteractionRefused`."""
        msg = self.state.messages[ref_id(message)]
        component = find_component(msg.components, custom_id)
        if component is None:
            raise LookupError(f"no component with custom_id {custom_id!r} on message {msg.id}")
        if component.get("disabled"):
            raise ValueError(f"component {custom_id!r} is disabled")
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": component["type"]}
        if values is not None or component["type"] != 2:
            channel = self.state.channels[msg.channel_id]
            data["values"], resolved = pick(self._builder(), component, list(values or []), channel)
            if resolved:
                data["resolved"] = resolved
        return self._dispatch_interaction(
            MESSAGE_COMPONENT, user, msg.channel_id, data, message=msg
        )

    async def submit_modal(
        self, user: Ref, handle: InteractionHandle, values: dict[str, Any]
    ) -> InteractionHandle:
        """Submit the modal the bot opened (response type 9) with ``{custom_id: value}``:
        text inputs take strings, selects lists (as :meth:`click`), file uploads lists of
        :class:`~discord_emulator.component_input.Upload`. What Discord's client would not
        let through (a required input left empty, text over ``max_length``...) raises
        :class:`InteractionRefused`."""
        modal = handle.interaction.modal
        if modal is None:
            raise LookupError("the bot did not answer this interaction with a modal")
        unknown = set(values) - set(modal_inputs(modal.get("components") or []))
        if unknown:
            raise LookupError(f"no inputs {sorted(unknown)} in modal {modal.get('custom_id')!r}")
        parent = handle.interaction
        components, resolved = modal_submission(
            self._builder(),
            modal.get("components") or [],
            values,
            self.state.channels[parent.channel_id],
            self.actions.store_attachment,
        )
        data: dict[str, Any] = {"custom_id": modal.get("custom_id"), "components": components}
        if resolved:
            data["resolved"] = resolved
        message = self.state.messages.get(parent.message_id) if parent.message_id else None
        return self._dispatch_interaction(
            MODAL_SUBMIT, user, parent.channel_id, data, message=message
        )


def _refuse_in_archived_thread(channel: Channel) -> None:
    # Discord's client offers no application commands in an archived thread: a user must
    # unarchive it (by sending a message) first
    # (https://discord.com/developers/docs/topics/threads#archiving-and-unarchiving-threads).
    if channel.thread is not None and channel.thread.archived:
        raise InteractionRefused(f"thread {channel.id} is archived")
