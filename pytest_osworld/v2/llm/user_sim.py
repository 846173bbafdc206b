"""The simulated user of OSWorld-V2 tasks: who answers when the agent asks (a task's ``user_simulator``).

Three kinds, as upstream's: ``llm`` (a model plays the user from the task's ``knowledge`` and
``persona``), ``scripted`` (the first ``knowledge`` key found in the question, case-insensitive, gives
the answer; else ``default_response``), ``fixed`` (always ``response``). A spec without ``type`` is
scripted, as upstream's. Every exchange is recorded; an llm user whose model fails or answers nothing
raises :class:`UserSimError` (the task is masked ``user_sim_error``), where upstream raises too.

The llm user's model: ``OSWORLD_USER_SIM_*`` first, then the spec's keys, then (for what neither
sets) the judge's configuration (:mod:`pytest_osworld.v2.llm.settings`); the model defaults to gpt-4o and
the answer to 256 tokens. ``OSWORLD_USER_SIM_MODEL_NAME`` and ``..._MODEL_BASE_URL`` are not read
(upstream ignores them too; a warning says so).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pytest_osworld.errors import OsworldError
from pytest_osworld.models.base import ModelError
from pytest_osworld.models.messages import Message
from pytest_osworld.models.secrets import Redactor, Secret
from pytest_osworld.record import ModelCalls, Usage
from pytest_osworld.v2.llm import fields as checks
from pytest_osworld.v2.llm.clients import ClientPool
from pytest_osworld.v2.llm.judge import count_calls, did_not_answer, empty_answer
from pytest_osworld.v2.llm.settings import (
    REASONING_EFFORTS,
    CallDefaults,
    JudgeConfig,
    JudgeConfigError,
    JudgeSettings,
    resolve,
)

logger = logging.getLogger("pytest_osworld.v2.llm.user_sim")

ENV_PREFIX = "OSWORLD_USER_SIM_"
ENV = {
    "provider": ENV_PREFIX + "PROVIDER",
    "model": ENV_PREFIX + "MODEL",
    "api_key": ENV_PREFIX + "API_KEY",
    "api_key_env": ENV_PREFIX + "API_KEY_ENV",
    "base_url": ENV_PREFIX + "BASE_URL",
    "temperature": ENV_PREFIX + "TEMPERATURE",
    "max_tokens": ENV_PREFIX + "MAX_TOKENS",
    "reasoning_effort": ENV_PREFIX + "REASONING_EFFORT",
}
NOT_READ = {ENV_PREFIX + "MODEL_NAME": ENV["model"], ENV_PREFIX + "MODEL_BASE_URL": ENV["base_url"]}  # -> the one read
TYPES = ("llm", "scripted", "fixed")
DEFAULT_MODEL = "gpt-4o"
DEFAULT_MAX_TOKENS = 256
DEFAULT_RESPONSE = "I'm not sure about that."  # upstream's answer when a scripted or fixed user has none
WHO = "the simulated user's model"


class UserSimError(OsworldError):
    """The simulated user could not answer (its model failed or said nothing, or is misconfigured).

    The task is masked ``user_sim_error``: the agent's next step would rest on an answer nobody gave.
    """

    reason = "user_sim_error"


class UserSimSpecError(OsworldError):
    """A task's ``user_simulator`` is malformed: the task cannot be set up as written. The message names
    the field and the fix."""

    reason = "setup_error"


@dataclass(frozen=True)
class Exchange:
    """One question and its answer (None when the user could not answer). ``error`` is sanitized."""

    question: str
    answer: str | None
    seconds: float
    ok: bool
    error: str | None = None
    model: str | None = None  # the llm user's model; None for scripted and fixed users
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None


class UserSimulator(ABC):
    """A task's simulated user: ``respond(question)``, ``get_history()`` as upstream's, thread-safe."""

    kind: ClassVar[str]

    def __init__(self) -> None:
        self._exchanges: list[Exchange] = []
        self._lock = threading.Lock()

    def respond(self, question: str) -> str:
        """The user's answer. Raises :class:`UserSimError` when it has none (the exchange is recorded)."""
        question = question if isinstance(question, str) else str(question)
        started = time.monotonic()
        try:
            answer, usage = self._answer(question)
        except UserSimError as exc:
            self._add(Exchange(question, None, _since(started), False, str(exc), self.model))
            raise
        self._add(
            Exchange(
                question,
                answer,
                _since(started),
                True,
                model=self.model,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                cost=usage.cost,
            )
        )
        return answer

    def get_history(self) -> list[dict[str, str]]:
        """The questions answered, in order: ``[{"question": ..., "answer": ...}]`` (upstream's shape)."""
        return [{"question": e.question, "answer": e.answer} for e in self.exchanges() if e.answer is not None]

    def reset(self, instruction: str | None = None) -> None:
        """Forget the conversation (a new episode of the same task)."""
        with self._lock:
            self._exchanges = []

    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    def failed(self) -> list[Exchange]:
        return [e for e in self.exchanges() if not e.ok]

    def error(self) -> str | None:
        """Why the task is masked ``user_sim_error`` (None: every question was answered)."""
        failed = self.failed()
        return failed[0].error if failed else None

    def record(self) -> ModelCalls | None:
        """What the task's result record keeps under ``user_sim``: the model's calls (None without any)."""
        return count_calls(self.exchanges()) if self.model and self.exchanges() else None

    @property
    def model(self) -> str | None:
        return None

    def close(self) -> None:  # noqa: B027 - only a user with its own model clients holds anything
        """Release what the user holds."""

    @abstractmethod
    def _answer(self, question: str) -> tuple[str, Usage]: ...

    def _add(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)
        logger.debug("simulated user (%s) Q: %r A: %r", self.kind, exchange.question, exchange.answer)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.exchanges())} exchanges)"


class FixedUser(UserSimulator):
    kind = "fixed"

    def __init__(self, response: str) -> None:
        super().__init__()
        self.response = response

    def _answer(self, question: str) -> tuple[str, Usage]:
        return self.response, Usage()


class ScriptedUser(UserSimulator):
    kind = "scripted"

    def __init__(self, knowledge: Mapping[str, Any], default_response: str) -> None:
        super().__init__()
        self.knowledge = dict(knowledge)
        self.default_response = default_response

    def _answer(self, question: str) -> tuple[str, Usage]:
        asked = question.lower()
        for keyword, answer in self.knowledge.items():  # the first match in the spec's order, as upstream
            if keyword.lower() in asked:
                return str(answer), Usage()
        return self.default_response, Usage()


class LlmUser(UserSimulator):
    """A model plays the user: a system prompt with what the user knows, then the conversation so far."""

    kind = "llm"

    def __init__(
        self,
        config: JudgeConfig,
        *,
        knowledge: Any,
        persona: str | None,
        instruction: str | None,
        clients: ClientPool | None,
    ) -> None:
        super().__init__()
        self.config = config
        self.knowledge = knowledge
        self.persona = persona
        self.instruction = instruction
        self._own_clients = clients is None
        self._clients = clients or ClientPool()
        self._redact = Redactor(config.key)
        self._turns: list[tuple[str, str]] = []

    @property
    def model(self) -> str:
        return self.config.model

    def reset(self, instruction: str | None = None) -> None:
        super().reset(instruction)
        with self._lock:
            self._turns = []
            if instruction is not None:
                self.instruction = instruction

    def system_prompt(self) -> str:
        lines = [
            "You are the person who asked a computer agent to carry out a task for you. "
            "While it works, the agent may ask you questions."
        ]
        if self.persona:
            lines.append(f"Who you are: {self.persona}")
        if self.instruction:
            lines.append(f"What you asked the agent to do: {self.instruction}")
        lines += [
            "What you know:",
            _knowledge_text(self.knowledge),
            "Answer from what you know and nothing else. When the answer is not in it, say that you do not "
            "know. Never invent a fact. Answer briefly and naturally, in one or two sentences, in your own "
            "words rather than copying the list above.",
        ]
        return "\n".join(lines)

    def _answer(self, question: str) -> tuple[str, Usage]:
        with self._lock:
            turns = list(self._turns)
        messages = [Message.system(self.system_prompt())]
        for asked, answered in turns:
            messages += [Message.user(asked), Message.assistant(answered)]
        messages.append(Message.user(question))
        try:
            completion = self._clients.get(self.config).complete(messages, **self.config.sampling())
        except ModelError as exc:
            raise UserSimError(self._redact(did_not_answer(WHO, self.config, exc))) from None
        text = completion.text.strip()
        if not text:
            raise UserSimError(empty_answer(WHO, self.config, completion.finish_reason))
        with self._lock:
            self._turns.append((question, text))
        return text, completion.usage

    def close(self) -> None:
        if self._own_clients:
            self._clients.close()


def make_user_simulator(
    spec: Mapping[str, Any],
    judge_config: JudgeSettings,
    *,
    task_id: str | None = None,
    instruction: str | None = None,
    clients: ClientPool | None = None,
    environ: Mapping[str, str] | None = None,
) -> UserSimulator:
    """The simulated user a task's ``user_simulator`` spec describes.

    ``judge_config``: the run's judge settings, which an llm user inherits for what its spec and
    ``OSWORLD_USER_SIM_*`` leave unset; ``instruction``: the task's, when the spec has none; ``clients``:
    the judge's pool, to share its connections. Raises :class:`UserSimSpecError` naming a bad field,
    :class:`UserSimError` for a bad ``OSWORLD_USER_SIM_*`` value or a judge configuration it cannot use.
    """
    where = f"task {task_id}: user_simulator" if task_id else "user_simulator"
    if not isinstance(spec, Mapping):
        raise UserSimSpecError(f"{where}: expected a mapping with a type (llm, scripted or fixed), got {spec!r}")
    fields = _Fields(spec, where)
    kind = fields.text("type") or "scripted"
    if kind not in TYPES:
        raise UserSimSpecError(f"{where}.type: unknown type {kind!r}; use llm, scripted or fixed")
    if kind == "fixed":
        response = fields.text("response", required="the answer the user always gives")
        assert response is not None
        return FixedUser(response)
    if kind == "scripted":
        knowledge = spec.get("knowledge")
        if not isinstance(knowledge, Mapping) or not all(isinstance(k, str) for k in knowledge):
            raise UserSimSpecError(
                f"{where}.knowledge: "
                + ("missing" if knowledge is None else f"expected a mapping, got {type(knowledge).__name__}")
                + "; a scripted user needs a mapping of question keywords to answers"
            )
        return ScriptedUser(knowledge, fields.text("default_response") or DEFAULT_RESPONSE)
    return _llm_user(spec, fields, judge_config, instruction, clients, os.environ if environ is None else environ)


def _llm_user(
    spec: Mapping[str, Any],
    fields: _Fields,
    judge_config: JudgeSettings,
    instruction: str | None,
    clients: ClientPool | None,
    environ: Mapping[str, str],
) -> LlmUser:
    where = fields.where
    knowledge = spec.get("knowledge")
    if knowledge is None or not isinstance(knowledge, str | Mapping | list):
        raise UserSimSpecError(
            f"{where}.knowledge: "
            + ("missing" if knowledge is None else f"expected text or a mapping, got {type(knowledge).__name__}")
            + "; an llm user answers only from what it knows"
        )
    if spec.get("api_key"):
        raise UserSimSpecError(
            f"{where}.api_key: a key written in a task is not used; export it in an environment variable and "
            "name that variable in api_key_env (or set OSWORLD_USER_SIM_API_KEY)"
        )
    for name, instead in NOT_READ.items():
        if environ.get(name):
            logger.warning("%s is not read (nor is it upstream); set %s", name, instead)
    env = _EnvFields(environ)
    options: dict[str, Any] = {
        "model": env.text("model") or fields.text("model") or DEFAULT_MODEL,
        "max_tokens": env.whole("max_tokens") or fields.whole("max_tokens") or DEFAULT_MAX_TOKENS,
    }
    for name, value in (
        ("provider", env.provider() or fields.provider()),
        ("base_url", env.url() or fields.url()),
        ("temperature", _first(env.number("temperature"), fields.number("temperature"))),
        ("reasoning_effort", env.effort() or fields.effort()),
    ):
        if value is not None:
            options[name] = value
    key: tuple[str, Secret] | None = None
    if literal := environ.get(ENV["api_key"], "").strip():
        key = (ENV["api_key"], Secret(literal))
    else:
        named = env.key_env() or fields.key_env()
        if named is not None:
            name, source = named
            key = (name, checks.key(name, source, environ, error=UserSimError, whose="the simulated user's"))
    try:
        config = resolve(options, judge_config, environ, CallDefaults(max_tokens=DEFAULT_MAX_TOKENS), key=key)
    except JudgeConfigError as exc:
        raise UserSimError(f"the simulated user's model cannot be configured: {exc}") from None
    return LlmUser(
        config,
        knowledge=knowledge,
        persona=fields.text("persona"),
        instruction=fields.text("instruction") or instruction,
        clients=clients,
    )


class _Fields:
    """A spec's values, each checked, an error naming ``<where>.<field>`` (raised as ``error``)."""

    error: type[OsworldError] = UserSimSpecError

    def __init__(self, values: Mapping[str, Any], where: str) -> None:
        self.values = values
        self.where = where

    def label(self, name: str) -> str:
        return f"{self.where}.{name}"

    def _get(self, name: str) -> Any:
        value = self.values.get(name)
        return None if value is None or value == "" else value

    def text(self, name: str, *, required: str | None = None) -> str | None:
        value = self._get(name)
        if value is None and required:
            raise self.error(f"{self.label(name)}: missing; give {required}")
        if value is not None and not isinstance(value, str):
            raise self.error(f"{self.label(name)}: expected text, got {type(value).__name__} {value!r}")
        return value

    def whole(self, name: str) -> int | None:
        value = self._get(name)
        return None if value is None else checks.whole(value, self.label(name), error=self.error, minimum=1)

    def number(self, name: str) -> float | None:
        value = self._get(name)
        return None if value is None else checks.number(value, self.label(name), error=self.error, minimum=0.0)

    def provider(self) -> str | None:
        value = self.text("provider")
        return None if value is None else checks.provider(value, self.label("provider"), error=self.error)[0]

    def url(self) -> str | None:
        value = self.text("base_url")
        if value is not None:
            checks.url(value, self.label("base_url"), error=self.error)
        return value

    def effort(self) -> str | None:
        value = self.text("reasoning_effort")
        if value is None:
            return None
        return checks.choice(value, self.label("reasoning_effort"), REASONING_EFFORTS, error=self.error)

    def key_env(self) -> tuple[str, str] | None:
        """The variable named for the key, and where it was named."""
        value = self.text("api_key_env")
        if value is None:
            return None
        return checks.env_name(value.strip(), self.label("api_key_env"), error=self.error), self.label("api_key_env")


class _EnvFields(_Fields):
    """``OSWORLD_USER_SIM_*``, checked as a spec's fields are; an error names the variable."""

    error = UserSimError

    def __init__(self, environ: Mapping[str, str]) -> None:
        super().__init__({name: environ.get(var, "").strip() for name, var in ENV.items()}, ENV_PREFIX)

    def label(self, name: str) -> str:
        return ENV[name]


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def _knowledge_text(knowledge: Any) -> str:
    if isinstance(knowledge, Mapping):
        return "\n".join(f"- {key}: {value}" for key, value in knowledge.items())
    if isinstance(knowledge, list):
        return "\n".join(f"- {item}" for item in knowledge)
    return str(knowledge)


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)
