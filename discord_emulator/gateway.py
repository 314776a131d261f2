"""The gateway WebSocket: HELLO, heartbeats, IDENTIFY/READY, RESUME with replay, dispatches.

Flow and opcodes from https://discord.com/developers/docs/events/gateway and
https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway. Frames are
uncompressed JSON text: discord.py asks for ``compress=zlib-stream`` in the URL but only
decompresses binary frames, so text frames are read as-is.

A session outlives its socket: dispatches sent while disconnected are buffered with their
sequence numbers and replayed on RESUME, as Discord does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from typing import Any, Protocol

from aiohttp import WSMsgType, web

from .clock import VirtualClock
from .config import EmulatorConfig
from .events import EmulatorEvent, EventHub
from .gateway_audience import Dispatch, payload_for
from .gateway_sessions import Connection, GatewaySession, parse_shard, shard_id_of
from .intents import GUILD_PRESENCES, GUILDS, PRIVILEGED
from .state import State

log = logging.getLogger(__name__)

# Opcodes.
DISPATCH, HEARTBEAT, IDENTIFY, PRESENCE_UPDATE, VOICE_STATE = 0, 1, 2, 3, 4
RESUME, RECONNECT, REQUEST_GUILD_MEMBERS, INVALID_SESSION, HELLO, HEARTBEAT_ACK = 6, 7, 8, 9, 10, 11

# Close codes (https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway-gateway-close-event-codes).
UNKNOWN_OPCODE, DECODE_ERROR, NOT_AUTHENTICATED, AUTH_FAILED, ALREADY_AUTHENTICATED = (
    4001,
    4002,
    4003,
    4004,
    4005,
)
RATE_LIMITED = 4008
SESSION_TIMED_OUT, INVALID_SHARD, SHARDING_REQUIRED, DISALLOWED_INTENTS = 4009, 4010, 4011, 4014


class GatewayHost(Protocol):
    """What the gateway needs of the emulator: its world, clock, settings, event hub and URL."""

    config: EmulatorConfig
    clock: VirtualClock
    state: State
    events: EventHub

    @property
    def gateway_url(self) -> str: ...


class Gateway:
    def __init__(self, emu: GatewayHost) -> None:
        self.emu = emu
        self.sessions: dict[str, GatewaySession] = {}
        self.connections: set[Connection] = set()
        # (application id, rate-limit bucket) -> virtual time of the last IDENTIFY it accepted.
        self.identified_at: dict[tuple[int, int], float] = {}
        # Sessions started per application (session_start_limit.remaining counts down).
        self.sessions_started: dict[int, int] = {}

    # ----- sending -----------------------------------------------------------------------
    def _send(self, conn: Connection, payload: dict[str, Any]) -> None:
        conn.outbox.put_nowait(json.dumps(payload))

    def _dispatch_to(self, session: GatewaySession, event: str, data: dict[str, Any]) -> None:
        session.seq += 1
        frame = json.dumps({"op": DISPATCH, "t": event, "s": session.seq, "d": data})
        session.buffer.append((session.seq, frame))
        if session.connection is not None:
            session.connection.outbox.put_nowait(frame)
        self.emu.events.publish(
            EmulatorEvent(
                "gateway_dispatch",
                data,
                self.emu.clock.time(),
                {"event": event, "seq": session.seq, "session_id": session.session_id},
            )
        )

    def dispatch(
        self,
        event: str,
        data: dict[str, Any],
        *,
        application_id: int | None = None,
        guild_id: int | None = None,
        channel_type: int | None = None,
        channel_id: int | None = None,
        thread_member_ids: set[int] | None = None,
    ) -> None:
        """Dispatch to every session (of ``application_id``) whose intents, permissions and shard
        let it receive the event (:mod:`discord_emulator.gateway_audience`)."""
        sent = Dispatch(
            event, data, application_id, guild_id, channel_type, channel_id, thread_member_ids
        )
        for session in list(self.sessions.values()):
            payload = payload_for(self.emu.state, session, sent)
            if payload is not None:
                self._dispatch_to(session, event, payload)

    # ----- faults ------------------------------------------------------------------------
    def drop_connections(self) -> int:
        """Abort every socket without a close frame, as a network failure would."""
        count = 0
        for conn in list(self.connections):
            transport = conn.request.transport
            if transport is not None:
                transport.abort()
                count += 1
        return count

    def send_reconnect(self) -> None:
        """Op 7: ask clients to reconnect and resume."""
        for conn in list(self.connections):
            self._send(conn, {"op": RECONNECT, "d": None})

    def invalidate_sessions(self, resumable: bool = False) -> None:
        """Op 9: invalidate sessions; with ``resumable=False`` clients must IDENTIFY again."""
        for conn in list(self.connections):
            if conn.session is not None and not resumable:
                conn.session.resumable = False
                self.sessions.pop(conn.session.session_id, None)
            self._send(conn, {"op": INVALID_SESSION, "d": resumable})

    # ----- the socket handler --------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0)
        await ws.prepare(request)
        conn = Connection(ws=ws, request=request)
        self.connections.add(conn)
        self.emu.events.publish(EmulatorEvent("gateway_connect", {}, self.emu.clock.time()))
        writer = asyncio.create_task(self._writer(conn))
        interval = self.emu.config.heartbeat_interval_ms
        self._send(conn, {"op": HELLO, "d": {"heartbeat_interval": interval}})
        timeout = interval / 1000.0 * self.emu.config.heartbeat_grace
        close_code: int | None = None
        try:
            while True:
                try:
                    msg = await ws.receive(timeout=timeout)
                except TimeoutError:
                    # No heartbeat in time: Discord closes the connection (zombied client).
                    close_code = SESSION_TIMED_OUT
                    if conn.session is not None:
                        self._forget(conn.session)
                    break
                if msg.type != WSMsgType.TEXT:
                    break
                if self._over_send_limit(conn):
                    close_code = RATE_LIMITED
                    break
                try:
                    payload = json.loads(msg.data)
                    op = payload["op"]
                except (ValueError, KeyError, TypeError):
                    close_code = DECODE_ERROR
                    break
                close_code = await self._on_op(conn, op, payload.get("d"))
                if close_code is not None:
                    break
        finally:
            self.connections.discard(conn)
            if conn.session is not None and conn.session.connection is conn:
                conn.session.connection = None
            await conn.outbox.put(None)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer, 1.0)
            if close_code is not None and not ws.closed:
                with contextlib.suppress(Exception):
                    await ws.close(code=close_code)
            self.emu.events.publish(
                EmulatorEvent("gateway_disconnect", {"code": close_code}, self.emu.clock.time())
            )
        return ws

    def _over_send_limit(self, conn: Connection) -> bool:
        """120 frames per connection per 60 s, heartbeats included (Gateway: Rate Limiting)."""
        now = time.monotonic()
        window = self.emu.config.gateway_send_window
        while conn.received and conn.received[0] <= now - window:
            conn.received.popleft()
        conn.received.append(now)
        return len(conn.received) > self.emu.config.gateway_send_limit

    def _ack_heartbeat(self, conn: Connection) -> None:
        """Answer a heartbeat after a network round trip, as Discord's ACK arrives.

        An ACK sent within microseconds over loopback reaches discord.py before its keep-alive
        thread has recorded that the heartbeat went out (it records the time only after the
        event loop finished the send, and the loop holds the GIL to read the ACK first); it
        then measures the whole heartbeat interval as latency and warns "Can't keep up, ...
        websocket is 41.3s behind".
        """
        ack = {"op": HEARTBEAT_ACK, "d": None}
        delay = self.emu.config.heartbeat_ack_delay_ms / 1000.0
        if delay <= 0:
            self._send(conn, ack)
        else:
            asyncio.get_running_loop().call_later(delay, self._send, conn, ack)

    def _forget(self, session: GatewaySession) -> None:
        session.resumable = False
        self.sessions.pop(session.session_id, None)

    async def _writer(self, conn: Connection) -> None:
        while True:
            frame = await conn.outbox.get()
            if frame is None or conn.ws.closed:
                return
            try:
                await conn.ws.send_str(frame)
            except (ConnectionError, RuntimeError):
                return

    async def _on_op(self, conn: Connection, op: int, data: Any) -> int | None:
        if op == HEARTBEAT:
            self._ack_heartbeat(conn)
            return None
        if op == IDENTIFY:
            return self._identify(conn, data or {})
        if op == RESUME:
            return self._resume(conn, data or {})
        if conn.session is None:
            return NOT_AUTHENTICATED
        if op == REQUEST_GUILD_MEMBERS:
            self._members_chunk(conn.session, data or {})
            return None
        if op in (PRESENCE_UPDATE, VOICE_STATE):
            return None
        return UNKNOWN_OPCODE

    def _identify(self, conn: Connection, data: dict[str, Any]) -> int | None:
        if conn.session is not None:
            return ALREADY_AUTHENTICATED
        app = self.emu.state.app_by_token(str(data.get("token", "")).removeprefix("Bot "))
        if app is None:
            return AUTH_FAILED
        intents = int(data.get("intents", 0))
        if intents & PRIVILEGED & ~app.privileged_intents:
            return DISALLOWED_INTENTS
        shard = parse_shard(data.get("shard", [0, 1]))
        if shard is None:
            return INVALID_SHARD
        state = self.emu.state
        bot_guilds = [
            g
            for g in state.guilds.values()
            if app.bot_user_id in g.members and shard_id_of(g.id, shard[1]) == shard[0]
        ]
        # "Each shard can only support a maximum of 2500 guilds": past it Discord closes with
        # 4011 (https://discord.com/developers/docs/events/gateway#sharding).
        if len(bot_guilds) > self.emu.config.max_guilds_per_shard:
            return SHARDING_REQUIRED
        # IDENTIFY is limited per bucket (shard_id % max_concurrency) to one per 5 seconds;
        # past it the gateway answers op 9 Invalid Session
        # (https://discord.com/developers/docs/events/gateway#session-start-limit-object and
        # #sharding-max-concurrency).
        bucket = (app.id, shard[0] % self.emu.config.max_concurrency)
        now = self.emu.clock.time()
        last = self.identified_at.get(bucket)
        if last is not None and now - last < self.emu.config.identify_interval:
            self._send(conn, {"op": INVALID_SESSION, "d": False})
            self.emu.events.publish(
                EmulatorEvent("gateway_identify_refused", {"shard": list(shard)}, now)
            )
            return None
        self.identified_at[bucket] = now
        self.sessions_started[app.id] = self.sessions_started.get(app.id, 0) + 1
        session = GatewaySession(
            session_id=secrets.token_hex(16),
            application_id=app.id,
            bot_user_id=app.bot_user_id,
            token=app.token,
            intents=intents,
            shard=shard,
        )
        self.sessions[session.session_id] = session
        conn.session = session
        session.connection = conn
        user = state.users[app.bot_user_id].payload()
        user.update(verified=True, mfa_enabled=False, email=None)
        ready: dict[str, Any] = {
            "v": 10,
            "user": user,
            "guilds": [{"id": str(g.id), "unavailable": True} for g in bot_guilds],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": self.emu.gateway_url,
            "application": {"id": str(app.id), "flags": app.flags},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "user_settings": {},
            "_trace": ["discord-emulator"],
        }
        if "shard" in data:
            ready["shard"] = list(shard)
        self._dispatch_to(session, "READY", ready)
        if intents & GUILDS:
            for guild in bot_guilds:
                self._dispatch_to(
                    session, "GUILD_CREATE", state.guild_create_payload(guild, app.bot_user_id)
                )
        return None

    def _resume(self, conn: Connection, data: dict[str, Any]) -> int | None:
        session = self.sessions.get(str(data.get("session_id")))
        token = str(data.get("token", "")).removeprefix("Bot ")
        if session is None or not session.resumable or session.token != token:
            # Not resumable: op 9 with d=false, the client must IDENTIFY afresh.
            self._send(conn, {"op": INVALID_SESSION, "d": False})
            return None
        old = session.connection
        if old is not None and old is not conn:
            old.session = None
            with contextlib.suppress(Exception):
                old.outbox.put_nowait(None)
        conn.session = session
        session.connection = conn
        last = int(data.get("seq") or 0)
        for seq, frame in list(session.buffer):
            if seq > last:
                conn.outbox.put_nowait(frame)
        self._dispatch_to(session, "RESUMED", {"_trace": ["discord-emulator"]})
        self.emu.events.publish(
            EmulatorEvent(
                "gateway_resumed",
                {"session_id": session.session_id, "from_seq": last},
                self.emu.clock.time(),
            )
        )
        return None

    def _members_chunk(self, session: GatewaySession, data: dict[str, Any]) -> None:
        """GUILD_MEMBERS_CHUNK for op 8
        (https://discord.com/developers/docs/events/gateway-events#request-guild-members):
        ``user_ids`` (at most 100, the rest in ``not_found``), or ``query`` (a username or
        nickname prefix, at most 100 members; ``""`` with ``limit`` 0 means everyone), in
        chunks of up to 1000 members; ``presences`` only with GUILD_PRESENCES; a nonce of
        more than 32 bytes is dropped."""
        guild = self.emu.state.guilds.get(int(data.get("guild_id", 0)))
        if guild is None:
            return
        state = self.emu.state
        not_found: list[str] = []
        if data.get("user_ids") is not None:
            raw = data["user_ids"]
            wanted = [int(u) for u in (raw if isinstance(raw, list) else [raw])][:100]
            found = [guild.members[u] for u in wanted if u in guild.members]
            not_found = [str(u) for u in wanted if u not in guild.members]
        else:
            query = str(data.get("query") or "").lower()
            limit = int(data.get("limit") or 0)
            found = [
                m
                for m in guild.members.values()
                if state.users[m.user_id].username.lower().startswith(query)
                or (query and (m.nick or "").lower().startswith(query))
            ]
            if query or limit:
                found = found[: min(limit or 100, 100) if query else limit]
        members = [state.member_payload(m) for m in found]
        chunks = [members[i : i + 1000] for i in range(0, len(members), 1000)] or [[]]
        nonce = data.get("nonce")
        for index, part in enumerate(chunks):
            chunk: dict[str, Any] = {
                "guild_id": str(guild.id),
                "members": part,
                "chunk_index": index,
                "chunk_count": len(chunks),
            }
            if index == 0 and not_found:
                chunk["not_found"] = not_found
            if data.get("presences") and session.intents & GUILD_PRESENCES:
                chunk["presences"] = []
            if isinstance(nonce, str) and len(nonce.encode()) <= 32:
                chunk["nonce"] = nonce
            self._dispatch_to(session, "GUILD_MEMBERS_CHUNK", chunk)

    async def close_all(self) -> None:
        for conn in list(self.connections):
            with contextlib.suppress(Exception):
                await conn.ws.close(code=1001)
