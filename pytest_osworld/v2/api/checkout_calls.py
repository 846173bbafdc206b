"""The judge calls of a user's OSWorld-V2 checkout (``--osworld-v2-code``), counted and checked.

With a checkout, its own ``desktop_env.evaluators.model_client`` answers the tasks' judge calls (its
providers, its retries), not :class:`~pytest_osworld.v2.llm.judge.Judge`. So that those calls are still
counted, recorded in the task's scope and mask the task ``judge_error`` when one raises or answers empty
(upstream's metrics turn either into a silent 0), the module's ``generate_text`` and ``generate_chat``
are wrapped as soon as the checkout is on ``sys.path``: before any task module, or ``llm_metrics``
(which binds ``generate_text`` when it is imported), can import them. The wrappers change nothing of
what upstream's call does or returns: its exception still reaches the task's code, which may swallow
it as upstream's metrics do; the record is what masks the task.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from pytest_osworld.v2.llm.judge import current_judge
from pytest_osworld.v2.llm.settings import CallDefaults

MODEL_CLIENT = "desktop_env.evaluators.model_client"
WRAPPED = ("generate_text", "generate_chat")
_MARK = "__osworld_counted__"
_ERROR_CHARS = 500


def count_checkout_calls() -> ModuleType | None:
    """Wrap the checkout's ``generate_text``/``generate_chat`` (the caller has put the checkout first on
    ``sys.path``). None when the checkout has no such module, or it cannot be imported here: then the
    task's own import of it fails the same way, and says why."""
    try:
        module = importlib.import_module(MODEL_CLIENT)
    except Exception:  # noqa: BLE001 - the checkout's code: its import error is the task's to report
        return None
    for name in WRAPPED:
        function = getattr(module, name, None)
        if callable(function) and not getattr(function, _MARK, False):
            setattr(module, name, _counted(name, function))
    return module


def _counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    kind = "text" if name == "generate_text" else "chat"

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        judge = current_judge()
        if judge is None:  # outside a task's scope (no judge configured): nothing to record into
            return function(*args, **kwargs)
        options = kwargs.get("options")
        if options is None and len(args) > (2 if kind == "text" else 1):
            options = args[2 if kind == "text" else 1]
        defaults = _defaults(kwargs)
        started = time.monotonic()
        try:
            answer = function(*args, **kwargs)
        except BaseException as exc:
            failure = f"the LLM judge (the checkout's {name}) failed: {type(exc).__name__}: {exc}"
            judge.record_outside_call(
                kind, _mapping(options), defaults, seconds=_since(started), error=failure[:_ERROR_CHARS]
            )
            raise
        empty = not isinstance(answer, str) or not answer.strip()
        problem = f"the LLM judge (the checkout's {name}) gave an empty answer" if empty else None
        judge.record_outside_call(kind, _mapping(options), defaults, seconds=_since(started), error=problem)
        return answer

    setattr(call, _MARK, True)
    return call


def _defaults(kwargs: dict[str, Any]) -> CallDefaults:
    base = CallDefaults()
    values = {
        "provider": kwargs.get("default_provider", base.provider),
        "model": kwargs.get("default_model", base.model),
        "api_key_env": kwargs.get("default_api_key_env", base.api_key_env),
        "max_tokens": kwargs.get("default_max_tokens", base.max_tokens),
    }
    with contextlib.suppress(TypeError, ValueError):
        return CallDefaults(
            str(values["provider"]), str(values["model"]), str(values["api_key_env"]), int(values["max_tokens"])
        )
    return base


def _mapping(options: Any) -> dict[str, Any] | None:
    return dict(options) if isinstance(options, dict) else None


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)
