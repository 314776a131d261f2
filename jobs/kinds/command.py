"""The operator's command catalog and the ``command`` kind.

A catalog is a TOML file (``ERRAND_COMMAND_CATALOG``; ``examples/commands.toml`` when unset) of
named commands: an argv list, working directory, environment allow-list, timeout, retry-safe
flag, whether the ``agent`` kind may call it as a tool, whether it runs only once the requester
approves it (``approve``), and declared parameters. User text never
reaches a shell and never becomes an argv element that was not declared: a parameter can only
fill a ``{name}`` placeholder *inside* an argv element the operator wrote, as one element.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import shlex
import tomllib
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jobs.errors import JobFailed, LeaseLost
from jobs.kinds.process import run_process
from jobs.runtime.attempt import StopReason
from jobs.runtime.context import Context
from jobs.runtime.registry import kind
from jobs.secrets import register, scrub
from jobs.settings import CommandSettings

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
Scalar = str | int | float | bool


class ParamDecl(BaseModel):
    """One declared parameter of a catalog command."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["string", "integer", "number", "boolean", "choice"] = "string"
    description: str = ""
    required: bool = True
    default: Scalar | None = None
    # string: a regular expression the whole value must match.
    pattern: str | None = None
    max_length: int = Field(default=200, ge=1, le=10_000)
    # string, integer, number: a value starting with "-" could pass as an option to the program;
    # refused unless set.
    allow_dash: bool = False
    choices: list[str] | None = None
    min: float | None = None
    max: float | None = None

    def check(self, name: str, value: Any) -> str:
        """The value as one argv string. Raises ValueError naming the parameter."""
        if self.type == "boolean":
            if not isinstance(value, bool):
                raise ValueError(f"parameter {name}: expected true or false")
            return "true" if value else "false"
        if self.type in ("integer", "number"):
            wanted = int if self.type == "integer" else int | float
            ok = isinstance(value, wanted)
            if isinstance(value, bool) or not ok:
                raise ValueError(f"parameter {name}: expected a {self.type}")
            if isinstance(value, float) and not math.isfinite(value):
                # NaN compares false with every bound: it would pass the range check below.
                raise ValueError(f"parameter {name}: must be a finite number")
            if (self.min is not None and value < self.min) or (
                self.max is not None and value > self.max
            ):
                raise ValueError(f"parameter {name}: must be within [{self.min}, {self.max}]")
            text = str(value)
            if text.startswith("-") and not self.allow_dash:  # "-5" could pass as an option
                raise ValueError(f"parameter {name}: must not start with '-'")
            return text
        if not isinstance(value, str):
            raise ValueError(f"parameter {name}: expected text")
        if self.type == "choice":
            if value not in (self.choices or []):
                allowed = ", ".join(self.choices or [])
                raise ValueError(f"parameter {name}: must be one of {allowed}")
            return value
        if len(value) > self.max_length or "\x00" in value:
            raise ValueError(f"parameter {name}: at most {self.max_length} characters, no NUL")
        if value.startswith("-") and not self.allow_dash:
            raise ValueError(f"parameter {name}: must not start with '-'")
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise ValueError(f"parameter {name}: must match {self.pattern}")
        return value

    def json_schema(self) -> dict[str, Any]:
        """This parameter as JSON schema (agent tool definitions)."""
        kinds = {
            "string": "string",
            "choice": "string",
            "integer": "integer",
            "number": "number",
            "boolean": "boolean",
        }
        schema: dict[str, Any] = {"type": kinds[self.type]}
        if self.description:
            schema["description"] = self.description
        if self.choices:
            schema["enum"] = self.choices
        if self.pattern:
            schema["pattern"] = self.pattern
        return schema


class CommandSpec(BaseModel):
    """One command of the catalog."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    argv: list[str] = Field(min_length=1)
    cwd: Path | None = None
    # Names of the worker's environment variables the command may see; nothing else is passed.
    env: list[str] = Field(default_factory=lambda: ["PATH", "LANG", "LC_ALL", "HOME"])
    # Fixed variables set by the operator.
    set_env: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(default=300.0, gt=0)
    retry_safe: bool = False
    agent_tool: bool = False
    # Asks the requester "Run `...`? Approve / Deny" before every run (see approval()).
    approve: bool = False
    params: dict[str, ParamDecl] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _placeholders_are_declared(self) -> CommandSpec:
        if _PLACEHOLDER.search(self.argv[0]):
            raise ValueError(f"command {self.name}: the program (argv[0]) cannot be a parameter")
        for element in self.argv:
            for used in _PLACEHOLDER.findall(element):
                if used not in self.params:
                    raise ValueError(f"command {self.name}: {{{used}}} is not a declared param")
        return self

    def argv_for(self, args: dict[str, Any]) -> list[str]:
        """The argv with validated ``args`` filled in. Raises ValueError on bad ``args``."""
        unknown = sorted(set(args) - set(self.params))
        if unknown:
            raise ValueError(f"command {self.name} has no parameter {', '.join(unknown)}")
        values: dict[str, str] = {}
        for name, decl in self.params.items():
            if name in args:
                values[name] = decl.check(name, args[name])
            elif decl.default is not None:
                values[name] = decl.check(name, decl.default)
            elif decl.required:
                raise ValueError(f"command {self.name}: parameter {name} is required")
            else:
                values[name] = ""
        return [_PLACEHOLDER.sub(lambda m: values[m[1]], element) for element in self.argv]

    def environment(self) -> dict[str, str]:
        """The child's environment: the allow-list from ours, then the fixed values."""
        return {k: os.environ[k] for k in self.env if k in os.environ} | self.set_env

    def tool_schema(self) -> dict[str, Any]:
        """This command as an OpenAI-style function tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description or self.name,
                "parameters": {
                    "type": "object",
                    "properties": {n: d.json_schema() for n, d in self.params.items()},
                    "required": [
                        n for n, d in self.params.items() if d.required and d.default is None
                    ],
                    "additionalProperties": False,
                },
            },
        }


class Catalog(BaseModel):
    """The operator's commands by name."""

    commands: dict[str, CommandSpec]
    path: Path

    def get(self, name: str) -> CommandSpec:
        try:
            return self.commands[name]
        except KeyError:
            known = ", ".join(sorted(self.commands)) or "none"
            raise ValueError(f"no command {name!r} in the catalog; known: {known}") from None

    def agent_tools(self) -> dict[str, CommandSpec]:
        return {n: c for n, c in self.commands.items() if c.agent_tool}


def default_catalog_path() -> Path:
    """``examples/commands.toml`` of the checkout."""
    return Path(__file__).resolve().parents[2] / "examples" / "commands.toml"


def catalog_path() -> Path:
    """The configured catalog file, else the example catalog."""
    return CommandSettings().catalog or default_catalog_path()


def load_catalog(path: Path | None = None) -> Catalog:
    """The catalog at ``path`` (default: settings), re-read when the file changes."""
    path = (path or catalog_path()).expanduser().resolve()
    stat = path.stat()
    return _load(path, stat.st_mtime_ns, stat.st_size)


@cache
def _load(path: Path, _mtime: int, _size: int) -> Catalog:
    raw = tomllib.loads(path.read_text())
    commands = {}
    for name, body in raw.get("commands", {}).items():
        spec = CommandSpec.model_validate({"name": name, **body})
        if spec.cwd is not None and not spec.cwd.is_absolute():
            spec = spec.model_copy(update={"cwd": (path.parent / spec.cwd).resolve()})
        commands[name] = spec
    return Catalog(commands=commands, path=path)


APPROVE, DENY = "Approve", "Deny"


async def approval(ctx: Context, spec: CommandSpec, args: dict[str, Any], key: str) -> str | None:
    """For a command marked ``approve``: ask the requester whether to run it (once per ``key``;
    a resumed attempt gets the recorded decision, so it never asks twice), and say why it may
    not run. None: it may run (approved, or it needs no approval).

    The decision is durable before the command can start, so a command that needs approval
    never runs without one, whatever crashes between the approval and the run.
    """
    if not spec.approve:
        return None
    line = shlex.join(spec.argv_for(args))
    decision = await ctx.ask(key, f"Run `{line}`?", [APPROVE, DENY])
    if decision == APPROVE:
        return None
    who = getattr(decision, "by", None) or "the requester"
    return f"not approved: {who} denied running `{line}`"


# Environment variables whose values are treated as secrets (masked by value wherever Errand
# writes text) when a catalog command passes them through.
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIAL|PRIVATE", re.I)


async def run_command(
    ctx: Context, spec: CommandSpec, args: dict[str, Any], *, log_asset: str, progress: bool
) -> dict[str, Any]:
    """Run one catalog command; its full log becomes the asset ``log_asset`` (even when stopped).

    Returns:
        ``command``, ``exit_code`` (None when stopped), ``stopped``, ``lines``, ``tail``, ``log``
        (None when the log could not be stored).

    Raises:
        JobCancelled: after the command stopped and its log was stored, when a cancel came.
    """
    # A cancel stops the child its own way (SIGTERM, SIGKILL after the kill grace) and the log
    # is kept: guarded, so the cancel does not cut this short; leaving it ends the job.
    with ctx.guarded():
        return await _run_command(ctx, spec, args, log_asset=log_asset, progress=progress)


async def _run_command(
    ctx: Context, spec: CommandSpec, args: dict[str, Any], *, log_asset: str, progress: bool
) -> dict[str, Any]:
    argv = spec.argv_for(args)
    env = spec.environment()
    # Credentials handed to the command are masked by value in its log, progress and result.
    register(*(v for k, v in env.items() if _SECRET_NAME.search(k)))

    async def on_line(count: int, line: str) -> None:
        await ctx.progress(count, None, scrub(line)[-200:], unit="line")

    settings = await asyncio.to_thread(CommandSettings)  # reads .env: not on the event loop
    result = await run_process(
        ctx,
        argv,
        cwd=spec.cwd,
        env=env,
        time_limit=spec.timeout,
        kill_grace=settings.kill_grace_seconds,
        on_line=on_line if progress else None,
    )
    stored: str | None = log_asset
    try:
        await ctx.asset(log_asset, result.log, "text/plain; charset=utf-8")
    except LeaseLost:
        raise
    except Exception as exc:
        # The command ran: an error now (a full disk) must not read as "not done", which would
        # mark a guarded effect failed and run a non-retry-safe command again.
        ctx.log.warning("command.log_not_stored", asset=log_asset, error=scrub(str(exc)))
        stored = None
    return {
        "command": spec.name,
        "exit_code": result.returncode,
        "stopped": result.stopped,
        "lines": result.lines,
        "tail": [scrub(line) for line in result.tail[-10:]],
        "log": stored,
    }


class CommandParams(BaseModel):
    """Parameters of ``command``: a catalog entry and its declared parameters."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="A command of the operator's catalog")
    args: dict[str, Scalar] = Field(default_factory=dict, description="Its declared parameters")

    @model_validator(mode="after")
    def _in_catalog(self) -> CommandParams:
        load_catalog().get(self.name).argv_for(self.args)
        return self


@kind("command", params=CommandParams, retry_safe=True, max_attempts=3)
async def command(ctx: Context, params: CommandParams) -> dict[str, Any]:
    """Run a command from the operator's catalog."""
    spec = (await asyncio.to_thread(load_catalog)).get(params.name)  # file I/O: off the loop
    refused = await approval(ctx, spec, params.args, "approve")
    if refused is not None:
        raise JobFailed(refused)

    async def run() -> dict[str, Any]:
        return await run_command(ctx, spec, params.args, log_asset="command.log", progress=True)

    # A command that is not retry-safe runs as a guarded effect: if the worker dies while it
    # runs, the job becomes unknown instead of running it a second time.
    result = await run() if spec.retry_safe else await ctx.effect("command", run)
    if spec.retry_safe or ctx.stop_reason is not StopReason.SHUTDOWN:
        ctx.checkpoint()  # stopped by a cancel: the attempt ends as cancelled, log kept
    tail = " | ".join(result["tail"][-3:])
    if result["stopped"] == "cancelled":
        # Stopped by a worker shutdown: the command did not finish, and (not retry-safe) it is
        # never run again; a retry-safe one was released before this line (checkpoint above).
        # Also reached on a later attempt from the stored outcome of its guarded effect.
        raise JobFailed(
            f"command {spec.name} was stopped before it finished (worker shutdown); it is not "
            f"retry-safe, so it was not run again; tail: {tail}"
        )
    if result["stopped"] == "timeout":
        raise JobFailed(f"command {spec.name} timed out after {spec.timeout:g}s; tail: {tail}")
    if result["exit_code"] != 0:
        message = f"command {spec.name} exited with code {result['exit_code']}; tail: {tail}"
        if spec.retry_safe:
            raise RuntimeError(message)  # retried while attempts remain
        raise JobFailed(message)
    return result
