"""Budgets: the bounds a job runs inside, per step and per job, and the usage measured against them.

The seed's rule is that async execution must not become a way to escape a bound, so every bound
is enforced where the usage happens (inside the step, by the runtime), not by the handler's good
will. Bounds are layered: global settings, then the kind's defaults, then per-job parameters; a
later layer may only *tighten* an earlier one (:meth:`Budget.tighten`), so user input can never
raise a limit an operator set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from jobs.errors import BOUND_NAMES, BudgetExceeded

if TYPE_CHECKING:
    from jobs.settings import BudgetSettings


class Budget(BaseModel):
    """Bounds on one job; ``None`` means unbounded at this layer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_tokens: int | None = Field(default=None, ge=0, description="Model tokens per step")
    step_tool_calls: int | None = Field(default=None, ge=0, description="Tool calls per step")
    step_seconds: float | None = Field(default=None, gt=0, description="Wall time per step")
    job_steps: int | None = Field(default=None, ge=0, description="Steps per job")
    job_tokens: int | None = Field(default=None, ge=0, description="Model tokens per job")
    job_seconds: float | None = Field(
        default=None, gt=0, description="Wall time of the whole job (all attempts together)"
    )

    @classmethod
    def of(cls, settings: BudgetSettings) -> Budget:
        """The global bounds an operator set (``ERRAND_BUDGET_*``) as a budget."""
        return cls(**settings.model_dump())

    def tighten(self, other: Budget | None) -> Budget:
        """The stricter of ``self`` and ``other`` for every bound."""
        if other is None:
            return self
        values: dict[str, Any] = {}
        for name in BOUND_NAMES:
            mine, theirs = getattr(self, name), getattr(other, name)
            values[name] = theirs if mine is None else mine if theirs is None else min(mine, theirs)
        return Budget(**values)


class Usage(BaseModel):
    """What a step or a job consumed."""

    model_config = ConfigDict(extra="ignore")

    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # The part of ``tokens`` Errand estimated because the provider reported no usage.
    estimated_tokens: int = 0
    tool_calls: int = 0
    steps: int = 0
    seconds: float = 0.0

    def add(self, other: Usage) -> None:
        """Add ``other`` into this usage (``steps`` included)."""
        self.tokens += other.tokens
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.estimated_tokens += other.estimated_tokens
        self.tool_calls += other.tool_calls
        self.steps += other.steps
        self.seconds = round(self.seconds + other.seconds, 3)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump()


class Meter:
    """Counts one step's usage against the step and job bounds; raises on the first excess.

    Handlers receive it from ``ctx.step(name)``; model and tool code report through it.
    """

    def __init__(self, budget: Budget, job_usage: Usage, name: str) -> None:
        self.budget = budget
        self.name = name
        self.usage = Usage(steps=1)
        self._job = job_usage

    @staticmethod
    def estimate(*texts: str) -> int:
        """Tokens of ``texts`` as Errand estimates them when a provider reports no usage: what
        :meth:`reserve` is given for a request, and what :meth:`tokens` charges with
        ``estimated=True`` for a reply.

        One token per 4 characters, rounded up, per text: the usual rule of thumb for English
        with GPT-style tokenizers. It works offline (no tokenizer files); it errs high on plain
        prose, low on dense code or non-Latin scripts, and is marked as an estimate wherever it
        is charged.
        """
        return sum(-(-len(text) // 4) for text in texts if text)

    def tokens(
        self,
        prompt: int = 0,
        completion: int = 0,
        total: int | None = None,
        *,
        estimated: bool = False,
    ) -> None:
        """Record model tokens and enforce both token bounds.

        ``estimated``: the provider reported no usage and these are Errand's estimate (see
        :meth:`estimate`); they count against the bounds like reported ones. The job's
        usage is charged at once, not when the step ends, so steps running at the same time
        (``asyncio.gather``) see each other's tokens against the job bound.
        """
        total = prompt + completion if total is None else total
        for usage in (self.usage, self._job):
            usage.prompt_tokens += prompt
            usage.completion_tokens += completion
            usage.tokens += total
            if estimated:
                usage.estimated_tokens += total
        self._check("step_tokens", self.usage.tokens, self.usage.estimated_tokens)
        self._check("job_tokens", self._job.tokens, self._job.estimated_tokens)

    def tool_calls(self, count: int = 1) -> None:
        """Count tool calls *before* running them; raises when they would exceed the bound."""
        self.usage.tool_calls += count
        self._job.tool_calls += count
        self._check("step_tool_calls", self.usage.tool_calls)

    def reserve(self, request_estimate: int) -> int | None:
        """``max_tokens`` for the next model call, or raise before it is made.

        Returns the tokens left in the step and in the job, whichever is smaller (None when
        neither is bounded). Raises :class:`BudgetExceeded` (no call is made) when none are
        left, or when the request alone (estimated, see :meth:`estimate`) needs more than
        is left: with the reply held to ``max_tokens``, a call then overshoots a bound by at
        most its own ``max_tokens``.
        """
        for bound, limit, used in (
            ("step_tokens", self.budget.step_tokens, self.usage.tokens),
            ("job_tokens", self.budget.job_tokens, self._job.tokens),
        ):
            if limit is None:
                continue
            if used >= limit:
                text = f"{used} of {limit} used; no call made"
                raise BudgetExceeded(bound, used, limit, message=text)
            if request_estimate > limit - used:
                text = (
                    f"{used} of {limit} used; the next request alone needs about "
                    f"{request_estimate} (estimated); no call made"
                )
                raise BudgetExceeded(bound, used, limit, message=text)
        return self.tokens_left()

    def tokens_left(self) -> int | None:
        """Tokens this step may still use (the smaller of the step and job remainders)."""
        left = [
            limit - used
            for limit, used in (
                (self.budget.step_tokens, self.usage.tokens),
                (self.budget.job_tokens, self._job.tokens),
            )
            if limit is not None
        ]
        return max(0, min(left)) if left else None

    def _check(self, bound: str, used: float, estimated: int = 0) -> None:
        limit = getattr(self.budget, bound)
        if limit is not None and used > limit:
            note = f"{estimated} of them estimated" if estimated else ""
            raise BudgetExceeded(bound, used, limit, note)
