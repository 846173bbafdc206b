"""The LLM judge of OSWorld-V2 evaluators: upstream's ``generate_text`` and ``generate_chat`` over the
project's model clients.

Every call is recorded (:class:`JudgeCall`: model, tokens, cost, seconds, whether it answered). A call
that fails past its retries, times out, gets an unreadable answer, or gets an EMPTY one raises
:class:`JudgeError` instead of returning: upstream's metrics turn any exception into a silent 0.0, which
here becomes a task masked ``judge_error`` (the episode checks its task's scope, :meth:`Judge.for_task`).
The configuration is resolved per call (:mod:`pytest_osworld.v2.llm.settings`); :func:`preflight` asks one
tiny question before any sandbox starts.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from pytest_osworld.models.base import ModelError
from pytest_osworld.models.messages import Image, Message, Part, Text
from pytest_osworld.models.secrets import Redactor
from pytest_osworld.record import ModelCalls, Usage
from pytest_osworld.v2.llm.chat import ImagePaths, chat_messages, image_paths_of, read_image, with_detail
from pytest_osworld.v2.llm.clients import ClientPool
from pytest_osworld.v2.llm.settings import (
    CallDefaults,
    JudgeConfig,
    JudgeConfigError,
    JudgeError,
    JudgeSettings,
    identity,
    is_configured,
    resolve,
)

__all__ = [
    "Judge",
    "JudgeCall",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeError",
    "JudgeScope",
    "JudgeSettings",
    "preflight",
]

PREFLIGHT_PROMPT = "Reply with one word, YES or NO. Is two plus two equal to four?"
PREFLIGHT_TOKENS = 16  # the budgets tasks give their verdicts are 5-16 tokens
NOT_CONFIGURED = (
    "no LLM judge is configured: set --osworld-judge-url and --osworld-judge-model, or OSWORLD_EVAL_MODEL_BASE_URL "
    "and OSWORLD_EVAL_MODEL_NAME (OSWORLD_EVAL_MODEL_NAME=gpt-4o alone uses OpenAI with OPENAI_API_KEY)"
)


@dataclass(frozen=True)
class JudgeCall:
    """One judge call as it went. ``error`` is sanitized: it never holds a key."""

    task_id: str | None  # None: outside any task (the preflight)
    kind: str  # "text" (generate_text) or "chat" (generate_chat)
    provider: str
    model: str
    url: str | None  # the endpoint without credentials; None when the call was never configured
    ok: bool
    seconds: float
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Counted(Protocol):
    """What :func:`count_calls` adds up: a judge call, a simulated user's exchange."""

    @property
    def ok(self) -> bool: ...
    @property
    def seconds(self) -> float: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def cost(self) -> float | None: ...


def count_calls(calls: Sequence[_Counted]) -> ModelCalls:
    """The calls added up, as the result record keeps them."""
    usage = Usage()
    for call in calls:
        usage = usage.add(
            Usage(prompt_tokens=call.prompt_tokens, completion_tokens=call.completion_tokens, cost=call.cost)
        )
    return ModelCalls(
        calls=len(calls),
        failed=sum(not call.ok for call in calls),
        seconds=round(sum(call.seconds for call in calls), 3),
        usage=usage,
    )


class _Calls:
    """A thread-safe list of calls."""

    def __init__(self) -> None:
        self._calls: list[JudgeCall] = []
        self._lock = threading.Lock()

    def add(self, call: JudgeCall) -> None:
        with self._lock:
            self._calls.append(call)

    def calls(self) -> list[JudgeCall]:
        with self._lock:
            return list(self._calls)

    def failed(self) -> list[JudgeCall]:
        return [c for c in self.calls() if not c.ok]

    def usage(self) -> ModelCalls:
        return count_calls(self.calls())


_SCOPE: contextvars.ContextVar[JudgeScope | None] = contextvars.ContextVar("osworld_judge_scope", default=None)


class Judge(_Calls):
    """The session's LLM judge: upstream's two calls, every call recorded, thread-safe.

    ``environ`` is read at each call, as upstream reads ``OSWORLD_EVAL_MODEL_*`` (default: ``os.environ``).
    """

    def __init__(
        self,
        settings: JudgeSettings | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        clients: ClientPool | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings or JudgeSettings()
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.clients = clients or ClientPool()
        self._keys = Redactor()  # every key a call used, kept out of every error text
        self._keys_lock = threading.Lock()  # Redactor.add sorts its list in place

    def configured(self) -> bool:
        """Whether a judge is named (a judge setting or an ``OSWORLD_EVAL_MODEL_*`` variable)."""
        return is_configured(self.settings, self.environ)

    # --- upstream's calls

    def generate_text(
        self,
        prompt: str,
        image_paths: ImagePaths = None,
        options: Mapping[str, Any] | None = None,
        *,
        system: str | None = None,
        default_provider: str = "openai",
        default_model: str = "gpt-4o",
        default_api_key_env: str = "OPENAI_API_KEY",
        default_max_tokens: int = 512,
    ) -> str:
        """The judge's answer to ``prompt`` with the images at ``image_paths`` attached (each after a line
        ``Image N:``, as upstream sends them), stripped. A missing image raises ``FileNotFoundError``
        before any call: that is the evaluator's input, not the judge failing."""
        defaults = CallDefaults(default_provider, default_model, default_api_key_env, default_max_tokens)
        return self._generate_text(_SCOPE.get(), prompt, image_paths, options, system, defaults)

    def generate_chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        default_provider: str = "openai",
        default_model: str = "gpt-4o",
        default_api_key_env: str = "OPENAI_API_KEY",
        default_max_tokens: int = 512,
    ) -> str:
        """The judge's answer to an OpenAI-style message list (``role``, ``content`` as text or parts;
        images as ``data:`` URLs), stripped."""
        defaults = CallDefaults(default_provider, default_model, default_api_key_env, default_max_tokens)
        return self._generate_chat(_SCOPE.get(), messages, options, defaults)

    # --- scopes

    @contextlib.contextmanager
    def for_task(self, task_id: str) -> Iterator[JudgeScope]:
        """A task's calls, apart: the scope's own ``generate_*`` record into it, and so do the judge's
        while the block runs in this context (a thread the block starts does not inherit it: pass the
        scope). After it: ``failed()`` non-empty masks the task ``judge_error``."""
        scope = JudgeScope(self, task_id)
        token = _SCOPE.set(scope)
        try:
            yield scope
        finally:
            _SCOPE.reset(token)

    def close(self) -> None:
        self.clients.close()

    def __repr__(self) -> str:
        return f"Judge({len(self.calls())} calls)"

    # --- the work

    def _generate_text(
        self,
        scope: JudgeScope | None,
        prompt: str,
        image_paths: ImagePaths,
        options: Mapping[str, Any] | None,
        system: str | None,
        defaults: CallDefaults,
    ) -> str:
        images = [read_image(path) for path in image_paths_of(image_paths)]

        def build(config: JudgeConfig) -> list[Message]:
            detail = config.image_detail if config.api == "openai" else None
            parts: list[Part] = [Text(prompt)]
            for number, (data, media_type) in enumerate(images, start=1):
                parts += [Text(f"Image {number}:"), Image(data, media_type, detail)]
            return [*([Message.system(system)] if system else []), Message("user", tuple(parts))]

        return self._call(scope, "text", build, options, defaults)

    def _generate_chat(
        self,
        scope: JudgeScope | None,
        messages: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None,
        defaults: CallDefaults,
    ) -> str:
        converted = chat_messages(messages)

        def build(config: JudgeConfig) -> list[Message]:
            if config.api != "openai":
                return converted
            return [with_detail(m, config.image_detail) for m in converted]

        return self._call(scope, "chat", build, options, defaults)

    def _call(
        self,
        scope: JudgeScope | None,
        kind: str,
        build: Callable[[JudgeConfig], list[Message]],
        options: Mapping[str, Any] | None,
        defaults: CallDefaults,
    ) -> str:
        started = time.monotonic()
        task_id = scope.task_id if scope is not None else None
        try:
            config = resolve(options, self.settings, self.environ, defaults)
        except JudgeConfigError as exc:
            provider, model = identity(options, self.settings, self.environ, defaults)
            self._add(scope, JudgeCall(task_id, kind, provider, model, None, False, _since(started), error=str(exc)))
            raise
        with self._keys_lock:
            self._keys.add(config.key)

        def record(ok: bool, attempts: int, usage: Usage, error: str | None = None) -> None:
            seconds = _since(started)
            self._add(
                scope,
                JudgeCall(
                    task_id,
                    kind,
                    config.provider,
                    config.model,
                    config.url,
                    ok,
                    seconds,
                    attempts,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    usage.cost,
                    error,
                ),
            )

        try:
            completion = self.clients.get(config).complete(build(config), **config.sampling())
        except ModelError as exc:
            message = self._redact(did_not_answer("the LLM judge", config, exc))
            record(False, exc.attempts, Usage(), message)
            raise JudgeError(message) from None
        text = completion.text.strip()
        if not text:  # upstream's metrics would read "" as NO: here nobody answered
            message = empty_answer("the LLM judge", config, completion.finish_reason)
            record(False, completion.attempts, completion.usage, message)  # its tokens were still spent
            raise JudgeError(message)
        record(True, completion.attempts, completion.usage)
        return text

    def record_outside_call(
        self,
        kind: str,
        options: Mapping[str, Any] | None,
        defaults: CallDefaults,
        *,
        seconds: float,
        error: str | None,
    ) -> None:
        """Record, in the current task's scope, a call that code outside this judge made (a user's
        checkout's own ``model_client``): what it was meant for, how long it took, and its error
        (``None``: it answered), with every key the configuration names kept out of the text."""
        scope = _SCOPE.get()
        provider, model = identity(options, self.settings, self.environ, defaults)
        url = None
        with contextlib.suppress(JudgeConfigError):
            config = resolve(options, self.settings, self.environ, defaults)
            url = config.url
            with self._keys_lock:
                self._keys.add(config.key)
        task_id = scope.task_id if scope is not None else None
        text = None if error is None else self._redact(error)
        self._add(scope, JudgeCall(task_id, kind, provider, model, url, error is None, seconds, 1, error=text))

    def _redact(self, text: str) -> str:
        with self._keys_lock:
            return self._keys(text)

    def _add(self, scope: JudgeScope | None, call: JudgeCall) -> None:
        self.add(call)
        if scope is not None:
            scope.add(call)


class JudgeScope(_Calls):
    """One task's judge calls (:meth:`Judge.for_task`); its ``generate_*`` are the judge's, recorded here."""

    def __init__(self, judge: Judge, task_id: str) -> None:
        super().__init__()
        self.judge = judge
        self.task_id = task_id

    def generate_text(
        self,
        prompt: str,
        image_paths: ImagePaths = None,
        options: Mapping[str, Any] | None = None,
        *,
        system: str | None = None,
        default_provider: str = "openai",
        default_model: str = "gpt-4o",
        default_api_key_env: str = "OPENAI_API_KEY",
        default_max_tokens: int = 512,
    ) -> str:
        defaults = CallDefaults(default_provider, default_model, default_api_key_env, default_max_tokens)
        return self.judge._generate_text(self, prompt, image_paths, options, system, defaults)

    def generate_chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        options: Mapping[str, Any] | None = None,
        *,
        default_provider: str = "openai",
        default_model: str = "gpt-4o",
        default_api_key_env: str = "OPENAI_API_KEY",
        default_max_tokens: int = 512,
    ) -> str:
        defaults = CallDefaults(default_provider, default_model, default_api_key_env, default_max_tokens)
        return self.judge._generate_chat(self, messages, options, defaults)

    def error(self) -> str | None:
        """Why the task is masked ``judge_error``: the first failed call's error (None: none failed)."""
        failed = self.failed()
        if not failed:
            return None
        more = f" (and {len(failed) - 1} more failed judge call(s))" if len(failed) > 1 else ""
        return f"{failed[0].error}{more}"

    def record(self) -> ModelCalls | None:
        """What the task's result record keeps under ``judge`` (None: the task made no judge call)."""
        return self.usage() if self.calls() else None

    def __repr__(self) -> str:
        return f"JudgeScope({self.task_id!r}, {len(self.calls())} calls)"


def current_judge() -> Judge | None:
    """The judge of the task whose scope this context is in (None outside any task's scope)."""
    scope = _SCOPE.get()
    return scope.judge if scope is not None else None


def preflight(judge: Judge) -> str | None:
    """Ask the judge one tiny question (YES or NO, at a verdict's budget) before any sandbox starts.

    None when it answers; else why not, sanitized, e.g. ``the LLM judge at http://gpu:8000/v1 (model m)
    did not answer: HTTP 500: overloaded (3 attempts)``. The call is recorded with the judge's others.
    """
    if not judge.configured():
        return NOT_CONFIGURED
    try:
        judge.generate_text(PREFLIGHT_PROMPT, default_max_tokens=PREFLIGHT_TOKENS)
    except JudgeError as exc:
        return str(exc)
    return None


# --- texts shared with the simulated user


def did_not_answer(who: str, config: JudgeConfig, exc: ModelError) -> str:
    """``<who> at URL (model m) did not answer: HTTP 500: ... (3 attempts)`` from a client's error."""
    # The client's text is "the model endpoint <url> failed after N attempt(s): <problem>": keep the problem.
    text = str(exc)
    problem = text.partition(": ")[2] or text
    attempts = f"{exc.attempts} attempt{'s' if exc.attempts != 1 else ''}"
    return f"{who} at {config.url} (model {config.model}) did not answer: {problem} ({attempts})"


def empty_answer(who: str, config: JudgeConfig, finish_reason: str | None) -> str:
    why = f" (finish reason {finish_reason})" if finish_reason else ""
    return f"{who} at {config.url} (model {config.model}) gave an empty answer{why}"


# --- messages


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)
