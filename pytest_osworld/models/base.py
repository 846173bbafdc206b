"""The model client interface, its answer and its errors."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from pytest_osworld.errors import OsworldError
from pytest_osworld.record import Usage

if TYPE_CHECKING:
    from pytest_osworld.models.messages import Message
    from pytest_osworld.settings import Settings

ModelApi = Literal["openai", "anthropic"]


class ModelConfigError(OsworldError):
    """The model endpoint is misconfigured (unreachable, key refused, unknown model): no task can run."""


class ModelError(OsworldError):
    """A model request failed past its retries, or was refused: the episode is masked ``model_error``."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


@dataclass(frozen=True)
class Completion:
    """One model answer. ``text`` is empty when the model said nothing."""

    text: str
    usage: Usage
    seconds: float  # wall-clock time of the request, retries and their waits included
    finish_reason: str | None = None
    attempts: int = 1


@dataclass(frozen=True)
class Sampling:
    """Sampling parameters of one request; None leaves the endpoint's default."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None  # OpenAI's reasoning_effort (the LLM judge's); not sent to Anthropic

    @classmethod
    def from_settings(cls, settings: Settings) -> Sampling:
        return cls(
            temperature=settings.model.temperature, top_p=settings.model.top_p, max_tokens=settings.model.max_tokens
        )

    def as_overrides(self) -> dict[str, Any]:
        """Keyword arguments for :meth:`ModelClient.complete` (a task's overrides: only what is set)."""
        return self.given(*vars(self))

    def given(self, *names: str) -> dict[str, Any]:
        """The named parameters that are set, in the order named (an API leaves the others at its default)."""
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}

    def merged(self, overrides: dict[str, Any]) -> Sampling:
        unknown = set(overrides) - set(vars(self))
        if unknown:
            raise TypeError(f"unknown sampling parameter(s): {', '.join(sorted(unknown))}")
        return Sampling(**{**vars(self), **{k: v for k, v in overrides.items() if v is not None}})


@dataclass(frozen=True)
class Prices:
    """Prices per million tokens; cost is known when at least one is given."""

    prompt: float | None = None
    completion: float | None = None

    def usage(self, prompt_tokens: int, completion_tokens: int) -> Usage:
        cost = None
        if self.prompt is not None or self.completion is not None:
            cost = (prompt_tokens * (self.prompt or 0.0) + completion_tokens * (self.completion or 0.0)) / 1_000_000
        return Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cost=cost)


class ModelClient(ABC):
    """A model endpoint. One per session, shared by every episode of the process."""

    api: ClassVar[ModelApi]
    model: str

    @abstractmethod
    def check(self) -> None:
        """Prove once, before any sandbox starts, that the endpoint answers and serves the model.

        Raises :class:`ModelConfigError` naming the URL and the fix.
        """

    @abstractmethod
    def complete(self, messages: Sequence[Message], **overrides: Any) -> Completion:
        """One answer. ``overrides``: ``temperature``, ``top_p``, ``max_tokens`` for this request.

        Raises :class:`ModelError` when the endpoint fails past the retries or refuses the request.
        """

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What the result record keeps of the endpoint: api, model name, host. Never a credential."""

    def close(self) -> None:  # noqa: B027 - optional: a subclass that holds nothing needs none
        """Release the connections."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
