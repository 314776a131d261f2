"""The ``agent`` kind: a model-driven task through an OpenAI-compatible chat-completions API.

Each step is one model call plus the tool calls it asks for; tools are catalog commands marked
``agent_tool``. Budgets are hard:

- every request carries ``max_tokens`` = the tokens left in the step and in the job, whichever
  is smaller; with none left (or a request that alone needs more than is left, estimated) no
  call is made;
- the reply is read up to a size that ``max_tokens`` allows (:data:`REPLY_OVERHEAD` bytes plus
  :data:`BYTES_PER_TOKEN` per token): a provider that ignores ``max_tokens`` is cut off there
  and charged the request's estimate plus the whole ``max_tokens``;
- a reply without ``usage`` is charged an estimate from the request and the reply
  (:meth:`jobs.runtime.budget.Meter.estimate`), marked as estimated;
- tool calls are counted *before* any runs.

The conversation is checkpointed after every model reply and every tool answer, so an attempt
that follows a shutdown or a crash resumes after the last completed call: a model call is never
made twice, and its tokens stay charged once. A tool call that was running when the worker
stopped is run again only if its command is retry-safe; otherwise the model is told it was
interrupted. The ``openai`` package is imported in a thread, never on the event loop. The key is
a ``SecretStr``, never logged or stored.

The agent talks back (docs/kinds.md, "The agent's questions, follow-ups and approvals"):

- its ``ask_user`` tool asks the requester a question (``ctx.ask``, keyed by the tool call), and
  the answer is the tool's result; the job parks while it waits;
- follow-ups sent to the job (a mention in its thread, ``/job tell``) join the conversation as
  the requester's messages before the next model call, saved with it in the checkpoint, so a
  resumed job sees each one once;
- a catalog command marked ``approve`` asks "Run `...`? Approve / Deny" first
  (:func:`jobs.kinds.command.approval`); the decision is recorded before the command may start,
  a denial is the tool's result, and a resumed job never asks twice.

Over 400 lines on purpose: one conversation's loop and the helpers only it calls (the model
call, rates, tool calls, questions); they share its checkpoint rules, which a split would spread.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jobs.errors import JobFailed
from jobs.kinds.command import CommandSpec, approval, load_catalog, run_command
from jobs.runtime.budget import Budget, Meter
from jobs.runtime.context import Context
from jobs.runtime.registry import kind
from jobs.secrets import scrub
from jobs.settings import AgentSettings
from jobs.traces import tracing

NOT_CONFIGURED = (
    "no model is configured: set ERRAND_AGENT_BASE_URL (an OpenAI-compatible server, e.g. "
    "http://localhost:11434/v1 for Ollama) or ERRAND_AGENT_API_KEY (OpenAI)"
)

TOOL_OUTPUT_LIMIT = 8000
"""Characters of a tool's output the model sees (the full log is an asset)."""

REPLY_OVERHEAD = 4096
"""Bytes of a reply allowed besides its tokens: the JSON envelope, ids, usage."""

BYTES_PER_TOKEN = 8
"""Bytes of reply allowed per ``max_tokens`` token (about 4 characters a token, JSON-escaped)."""

ASK_USER = "ask_user"
"""The agent's own tool: a question to the requester, whose answer is the tool's result."""

ASK_USER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": ASK_USER,
        "description": (
            "Ask the person who started this task a question and wait for the answer. Use it "
            "when you need a decision or a fact only they have."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question, in one sentence"},
                "choices": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Answers to offer (optional; at most 25)",
                },
            },
            "required": ["question"],
            "additionalProperties": False,
        },
    },
}

INTERRUPTED_TOOL = (
    "error: this tool call was interrupted when its worker stopped; it may or may not have "
    "taken effect, and it is not retry-safe, so it was not run again"
)


class AgentParams(BaseModel):
    """Parameters of ``agent``."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(min_length=1, max_length=20_000, description="The task")
    system: str | None = Field(default=None, max_length=20_000, description="A system prompt")
    tools: list[str] | None = Field(
        default=None, description="Catalog commands it may call (default: every agent tool)"
    )
    max_steps: int = Field(default=10, ge=1, le=200, description="Model calls at most")
    budget: Budget | None = Field(default=None, description="Tighter bounds for this job")
    ask_user: bool = Field(default=True, description="Whether it may ask the requester questions")

    @model_validator(mode="after")
    def _tools_exist(self) -> AgentParams:
        available = load_catalog().agent_tools()
        for name in self.tools or []:
            if name not in available:
                raise ValueError(
                    f"{name!r} is not an agent tool; available: "
                    f"{', '.join(sorted(available)) or 'none'}"
                )
        return self


@kind(
    "agent", params=AgentParams, retry_safe=False, max_attempts=1, budget=Budget(step_tool_calls=8)
)
async def agent(ctx: Context, params: AgentParams) -> dict[str, Any]:
    """Work on a task with a model and the operator's agent tools."""
    ctx.limit(params.budget)
    # Settings (.env), the catalog file, the openai import (~1 s) and the client (TLS context)
    # are all blocking: done in a thread so the worker's other jobs keep their heartbeats.
    setup = await asyncio.to_thread(_setup, params)
    state = ctx.resume_state or {}
    messages: list[dict[str, Any]] = list(state.get("messages") or [])
    if not messages:
        if params.system:
            messages.append({"role": "system", "content": params.system})
        messages.append({"role": "user", "content": params.prompt})
    number = int(state.get("steps", 0))  # model calls whose reply is kept
    started: str | None = state.get("started")  # the tool call that was running, if any
    if number:
        await ctx.progress(number, params.max_steps, "resuming")

    async def save(running: str | None = None) -> None:
        # What it read of its mailbox is saved with it (Context.checkpoint).
        await ctx.checkpoint({"messages": messages, "steps": number, "started": running})

    async def answer_tools(meter: Meter, calls: list[Any], interrupted: str | None) -> None:
        meter.tool_calls(len(calls))  # raises before any runs when over the bound
        for index, call in enumerate(calls, start=1):
            if call.id == interrupted and not _retry_safe(setup.tools, call):
                output = INTERRUPTED_TOOL
            else:

                async def starting(running: str = call.id) -> None:
                    await save(running=running)

                tool = getattr(getattr(call, "function", None), "name", None)
                with tracing.span("errand.tool_call", tool=str(tool), call=call.id):
                    output = await _run_tool(
                        ctx, meter, setup.tools, call, f"{number}-{index}", starting=starting
                    )
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
            await save()

    async def steer() -> None:
        """Follow-ups sent meanwhile join the conversation before the next model call."""
        heard = await ctx.messages()
        if heard:
            messages.extend(_followup(m) for m in heard)
            await save()

    try:
        pending = _unanswered(messages)
        if pending:  # the last reply's tool calls that have no answer yet
            async with ctx.step(f"model {number}") as meter:
                await answer_tools(meter, pending, started)
        while number < params.max_steps:
            await steer()
            async with ctx.step(f"model {number + 1}") as meter:
                message = await _call_model(ctx, meter, setup, messages)
                messages.append(message.model_dump(exclude_none=True))
                number += 1
                await save()  # from here on this call is never made again
                calls = list(message.tool_calls or [])
                if not calls:
                    await ctx.progress(number, number, "answered")
                    return {"answer": message.content or "", "steps": number, "model": setup.model}
                await answer_tools(meter, calls, None)
            await ctx.progress(number, params.max_steps, f"{len(calls)} tool call(s)")
        raise JobFailed(f"no final answer after {params.max_steps} steps (max_steps)")
    finally:
        await setup.client.close()


@dataclass
class _Setup:
    client: Any
    model: str
    tools: dict[str, CommandSpec]
    completion: Any  # openai's ChatCompletion model
    unreachable: type[BaseException]  # openai's APIConnectionError (timeouts included)
    settings: AgentSettings
    ask_user: bool = True


def unreachable(setup: _Setup, exc: BaseException) -> JobFailed:
    """The failure of a model call that never got an answer: which URL, and what to check
    (openai's own message, "Connection error.", names neither)."""
    where = scrub(setup.settings.endpoint)  # a URL may carry a password
    if "Timeout" in type(exc).__name__:
        within = setup.settings.timeout_seconds
        return JobFailed(
            f"the model at {where} did not answer within {within:g} s; check that it "
            "is running and not overloaded, or raise ERRAND_AGENT_TIMEOUT_SECONDS"
        )
    cause = exc.__cause__ or exc.__context__
    why = f" ({scrub(' '.join(str(cause).split()))[:200]})" if cause and str(cause) else ""
    return JobFailed(
        f"cannot reach the model at {where}{why}; check ERRAND_AGENT_BASE_URL and that the "
        "server is running and reachable from the worker"
    )


_import_lock = threading.Lock()


def _import_openai() -> Any:
    """Import ``openai`` (a slow import, run in a thread) without stalling the event loop.

    Its import allocates enough objects to set off full garbage collections, and a collection
    holds the GIL, so the loop stalls even with the import in a thread. The collector is paused
    for the import, and what the import built is frozen (``gc.freeze``: long-lived module objects
    need no scanning), so later collections stay short.
    """
    with _import_lock:
        if "openai" in sys.modules:
            return sys.modules["openai"]
        gc.disable()
        try:
            return importlib.import_module("openai")
        finally:
            gc.freeze()
            gc.enable()


def _setup(params: AgentParams) -> _Setup:
    """Everything blocking the agent needs before its first call (run in a thread)."""
    settings = AgentSettings()
    if not settings.configured:
        raise JobFailed(NOT_CONFIGURED)
    openai = _import_openai()
    tools = load_catalog().agent_tools()
    if params.tools is not None:
        tools = {n: tools[n] for n in params.tools}
    tools.pop(ASK_USER, None)  # the agent's own tool: a catalog command cannot take its name
    client = openai.AsyncOpenAI(
        base_url=settings.endpoint,
        # Local servers (Ollama, llama.cpp) take no key; the client wants a non-empty one.
        api_key=settings.api_key.get_secret_value() if settings.api_key else "none",
        timeout=settings.timeout_seconds,
        max_retries=settings.max_retries,
    )
    completion = importlib.import_module("openai.types.chat").ChatCompletion
    return _Setup(
        client,
        settings.model,
        tools,
        completion,
        openai.APIConnectionError,
        settings,
        params.ask_user,
    )


async def _call_model(ctx: Context, meter: Meter, setup: _Setup, messages: list[Any]) -> Any:
    """One chat completion, held to the token bounds; returns the reply's message."""
    request: dict[str, Any] = {"model": setup.model, "messages": messages}
    schemas = [t.tool_schema() for t in setup.tools.values()]
    if setup.ask_user:
        schemas.append(ASK_USER_TOOL)
    if schemas:
        request["tools"] = schemas
    request_tokens = meter.estimate(json.dumps(messages), json.dumps(request.get("tools")))
    max_tokens = meter.reserve(request_tokens)  # raises (no call) when nothing is left
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    limit = None if max_tokens is None else REPLY_OVERHEAD + BYTES_PER_TOKEN * max_tokens
    await _within_rates(ctx, setup.settings, request_tokens + (max_tokens or 0))

    async def fetch() -> bytes | None:
        api = setup.client.chat.completions.with_streaming_response
        async with api.create(**request) as response:
            body = bytearray()
            async for chunk in response.iter_bytes():
                body += chunk
                if limit is not None and len(body) > limit:
                    return None  # longer than max_tokens allows: stop reading, close it
            return bytes(body)

    try:
        with tracing.span("errand.model_call", model=setup.model, tokens=request_tokens):
            body = await ctx.race(fetch())
    except setup.unreachable as exc:  # after the client's own retries (max_retries)
        raise unreachable(setup, exc) from None
    if body is None:
        # The provider ignored max_tokens. Charge what it must at least have produced.
        assert max_tokens is not None
        ctx.log.warning("agent.reply_cut", max_tokens=max_tokens, bytes_read=limit)
        meter.tokens(request_tokens, max_tokens, estimated=True)
        raise JobFailed(f"the model's reply exceeded max_tokens={max_tokens}; it was cut off")
    reply = setup.completion.construct(**json.loads(body))
    message = reply.choices[0].message
    usage = reply.usage
    if usage is not None and usage.total_tokens is not None:
        meter.tokens(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    else:
        calls = message.model_dump(exclude_none=True).get("tool_calls")
        completion = meter.estimate(message.content or "", json.dumps(calls) if calls else "")
        meter.tokens(request_tokens, completion, estimated=True)
    return message


async def _within_rates(ctx: Context, settings: AgentSettings, tokens: int) -> None:
    """Wait for the provider's budgets, shared by the fleet: the tokens this call may use (the
    request and the most its reply may take), then one request."""
    provider = settings.endpoint
    window = settings.rate_window_seconds
    if settings.tokens_per_minute is not None:
        await ctx.within_rate(
            f"model tokens {provider}",
            settings.tokens_per_minute,
            tokens,
            what="the model's token rate",
            window=window,
        )
    if settings.requests_per_minute is not None:
        await ctx.within_rate(
            f"model requests {provider}",
            settings.requests_per_minute,
            what="the model's request rate",
            window=window,
        )


def _unanswered(messages: list[dict[str, Any]]) -> list[Any]:
    """Tool calls of the last assistant message that have no tool answer yet, as objects."""
    last = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    if last is None:
        return []
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    return [
        _Call(c["id"], _Function(c["function"]["name"], c["function"].get("arguments")))
        for c in last.get("tool_calls") or []
        if c["id"] not in answered
    ]


@dataclass
class _Function:
    name: str
    arguments: str | None


@dataclass
class _Call:
    id: str
    function: _Function


def _retry_safe(tools: dict[str, CommandSpec], call: Any) -> bool:
    """Whether an interrupted call may run again: a retry-safe command, or ``ask_user`` (asked
    again, its question returns the recorded answer)."""
    name = getattr(getattr(call, "function", None), "name", "")
    spec = tools.get(name)
    return name == ASK_USER or (spec is not None and spec.retry_safe)


def _followup(message: Any) -> dict[str, Any]:
    """A follow-up as the requester's (or an operator's) message in the conversation."""
    who = "the requester" if message.actor == "requester" else "an operator"
    return {"role": "user", "content": f"[follow-up from {who}] {message.text}"}


def _arguments(function: Any) -> dict[str, Any]:
    args = json.loads(getattr(function, "arguments", None) or "{}")
    if not isinstance(args, dict):
        raise ValueError("arguments must be a JSON object")
    return args


async def _ask_user(ctx: Context, call: Any) -> str:
    """The ``ask_user`` tool: the requester's answer (the job parks while it waits)."""
    try:
        args = _arguments(getattr(call, "function", None))
        question = args.get("question")
        choices = args.get("choices") or None
        if not isinstance(question, str) or not question.strip():
            raise ValueError("'question' must be text")
        if choices is not None and not (
            isinstance(choices, list) and all(isinstance(c, str) for c in choices)
        ):
            raise ValueError("'choices' must be a list of texts")
        answer = await ctx.ask(f"{ASK_USER}:{call.id}", question.strip(), choices)
    except ValueError as exc:
        return f"error: bad arguments for {ASK_USER}: {exc}"
    return f"The requester answered: {answer}"


async def _run_tool(
    ctx: Context,
    meter: Meter,
    tools: dict[str, Any],
    call: Any,
    label: str,
    *,
    starting: Callable[[], Awaitable[None]],
) -> str:
    """Run one tool call; problems go back to the model as the tool's answer. ``starting`` is
    awaited just before a command starts (it records that it runs: a crash after it does not
    run it again unless it is retry-safe)."""
    function = getattr(call, "function", None)
    name = getattr(function, "name", "")
    if name == ASK_USER:
        return await _ask_user(ctx, call)
    if name not in tools:
        return f"error: no tool named {name!r}; available: {', '.join(sorted(tools))}"
    try:
        args = _arguments(function)
        tools[name].argv_for(args)
    except ValueError as exc:
        return f"error: bad arguments for {name}: {exc}"
    refused = await approval(ctx, tools[name], args, f"approve:{call.id}")
    if refused is not None:
        ctx.log.info("agent.tool_denied", tool=name, step=meter.name)
        return f"error: {refused}; do not run it again without asking"
    await starting()
    ctx.log.info("agent.tool_call", tool=name, step=meter.name)
    result = await run_command(
        ctx, tools[name], args, log_asset=f"tool-{label}-{name}.log", progress=False
    )
    ctx.checkpoint()
    text = "\n".join(result["tail"])
    head = f"exit code {result['exit_code']}" if result["stopped"] is None else result["stopped"]
    return scrub(f"{head}\n{text}")[-TOOL_OUTPUT_LIMIT:]
