"""The ``agent`` kind: a model-driven task through an OpenAI-compatible chat-completions API.

Each step is one model call plus the tool calls it asks for; tools are catalog commands marked
``agent_tool``. The token and tool-call bounds of a step are enforced from the usage the API
reports and from the tool calls the model asks for (counted *before* any runs), so a job cannot
escape a bound by running long. A stop request aborts a model request in flight (its HTTP
connection is closed) and stops a tool's process group. The key is a ``SecretStr`` and is never
logged or stored; endpoint and model come from ``ERRAND_AGENT_*`` settings, so OpenAI, Ollama,
vLLM or a llama.cpp server all work.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jobs.errors import JobFailed
from jobs.kinds.command import load_catalog, run_command
from jobs.runtime.budget import Budget, Meter
from jobs.runtime.context import Context
from jobs.runtime.registry import kind
from jobs.secrets import scrub
from jobs.settings import AgentSettings

TOOL_OUTPUT_LIMIT = 8000
"""Characters of a tool's output the model sees (the full log is an asset)."""


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
    from openai import AsyncOpenAI

    ctx.limit(params.budget)
    settings = AgentSettings()
    tools = load_catalog().agent_tools()
    if params.tools is not None:
        tools = {n: tools[n] for n in params.tools}
    messages: list[dict[str, Any]] = []
    if params.system:
        messages.append({"role": "system", "content": params.system})
    messages.append({"role": "user", "content": params.prompt})
    client = AsyncOpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key.get_secret_value(),
        timeout=settings.timeout_seconds,
        max_retries=settings.max_retries,
    )
    try:
        for number in range(1, params.max_steps + 1):
            async with ctx.step(f"model {number}") as meter:
                extra: dict[str, Any] = {"tools": [t.tool_schema() for t in tools.values()]}
                if not tools:
                    extra = {}
                reply = await ctx.race(
                    client.chat.completions.create(
                        model=settings.model,
                        messages=messages,  # type: ignore[arg-type]
                        **extra,
                    )
                )
                if reply.usage is not None:
                    meter.tokens(
                        reply.usage.prompt_tokens,
                        reply.usage.completion_tokens,
                        reply.usage.total_tokens,
                    )
                message = reply.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                calls = message.tool_calls or []
                if not calls:
                    answer = message.content or ""
                    await ctx.progress(number, number, "answered")
                    return {"answer": answer, "steps": number, "model": settings.model}
                meter.tool_calls(len(calls))  # raises before any runs when over the bound
                for index, call in enumerate(calls, start=1):
                    output = await _run_tool(ctx, meter, tools, call, f"{number}-{index}")
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
            note = f"step {number}: {len(calls)} tool call(s)"
            await ctx.progress(number, params.max_steps, note)
        raise JobFailed(f"no final answer after {params.max_steps} steps (max_steps)")
    finally:
        await client.close()


async def _run_tool(
    ctx: Context, meter: Meter, tools: dict[str, Any], call: Any, label: str
) -> str:
    """Run one tool call; problems go back to the model as the tool's answer."""
    function = getattr(call, "function", None)
    name = getattr(function, "name", "")
    if name not in tools:
        return f"error: no tool named {name!r}; available: {', '.join(sorted(tools))}"
    try:
        args = json.loads(getattr(function, "arguments", None) or "{}")
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
        tools[name].argv_for(args)
    except ValueError as exc:
        return f"error: bad arguments for {name}: {exc}"
    ctx.log.info("agent.tool_call", tool=name, step=meter.name)
    result = await run_command(
        ctx, tools[name], args, log_asset=f"tool-{label}-{name}.log", progress=False
    )
    ctx.checkpoint()
    text = "\n".join(result["tail"])
    head = f"exit code {result['exit_code']}" if result["stopped"] is None else result["stopped"]
    return scrub(f"{head}\n{text}")[-TOOL_OUTPUT_LIMIT:]
