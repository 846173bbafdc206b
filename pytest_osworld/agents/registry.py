"""Runners by name (``--osworld-agent NAME``): the built-in ones and third parties' entry points.

A third-party distribution declares a runner in the entry point group ``pytest_osworld.runners``::

    [project.entry-points."pytest_osworld.runners"]
    my-agent = "my_package.runner:MyRunner"

The value is a :class:`Runner` subclass (built as ``MyRunner(ctx)``) or a factory taking a
:class:`RunnerContext` and returning a runner. A built-in name cannot be taken over.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from importlib.metadata import EntryPoint
from typing import Any, TypeGuard, cast

from pytest_osworld.agents.base import Runner, RunnerContext
from pytest_osworld.entry_points import declared, distribution
from pytest_osworld.errors import OsworldError
from pytest_osworld.models.base import ModelConfigError

GROUP = "pytest_osworld.runners"
BUILTIN = {
    "oracle": "pytest_osworld.agents.oracle:OracleRunner",
    "null": "pytest_osworld.agents.null:NullRunner",
    "pyautogui": "pytest_osworld.agents.pyautogui_runner:PyautoguiRunner",
    "computer_13": "pytest_osworld.agents.computer13_runner:Computer13Runner",
    # Native computer-use protocols (docs/agents.md#native-computer-use-runners).
    "anthropic-computer": "pytest_osworld.agents.native.anthropic:AnthropicComputerRunner",
    "openai-computer": "pytest_osworld.agents.native.openai_computer:OpenAIComputerRunner",
    "tool-calling": "pytest_osworld.agents.native.tool_calling:ToolCallingRunner",
    "uitars": "pytest_osworld.agents.native.uitars:UITarsRunner",
}

RunnerFactory = Callable[[RunnerContext], Runner]
RunnerSource = type[Runner] | RunnerFactory

logger = logging.getLogger("pytest_osworld.agents")


class UnknownRunner(OsworldError):
    """No runner has the name asked for."""


class BrokenRunner(OsworldError):
    """A runner's entry point cannot be loaded, or it is not a runner."""


def _plugin_entry_points() -> dict[str, EntryPoint]:
    return declared(GROUP, BUILTIN, "runner", logger)


def runner_names() -> list[str]:
    """Every runner name: the built-in ones first, then the installed plugins' (not imported yet)."""
    return [*BUILTIN, *sorted(_plugin_entry_points())]


def get_runner_class(name: str) -> RunnerSource:
    """The runner class (or factory) registered under ``name``. Raises :class:`UnknownRunner`."""
    if name in BUILTIN:
        module, _, attribute = BUILTIN[name].partition(":")
        builtin = getattr(importlib.import_module(module), attribute)
        assert _is_runner_class(builtin)  # every built-in runner is a Runner subclass
        return builtin
    ep = _plugin_entry_points().get(name)
    if ep is None:
        raise UnknownRunner(
            f"unknown runner {name!r} for --osworld-agent; known runners: {', '.join(runner_names())} "
            f"(a plugin adds one through the entry point group {GROUP!r})"
        )
    try:
        value = ep.load()
    except Exception as exc:  # an import error of someone else's package: name it, do not crash the session
        raise BrokenRunner(
            f"runner {name!r} from {distribution(ep)} cannot be loaded ({ep.value}): {type(exc).__name__}: {exc}"
        ) from exc
    if _is_runner_class(value):
        return value
    if callable(value):
        # A factory's signature cannot be checked before it is called; make_runner checks what it returns.
        return cast(RunnerFactory, value)
    raise BrokenRunner(
        f"runner {name!r} from {distribution(ep)} ({ep.value}) is neither a Runner subclass nor a factory"
    )


def _is_runner_class(value: Any) -> TypeGuard[type[Runner]]:
    return isinstance(value, type) and issubclass(value, Runner)


def make_runner(name: str, ctx: RunnerContext) -> Runner:
    """A runner for one episode. ``RunnerUnavailable`` from the runner propagates (the task is skipped)."""
    source = get_runner_class(name)
    runner = cast(RunnerFactory, source)(ctx)  # a Runner subclass is built the same way
    if not isinstance(runner, Runner):
        raise BrokenRunner(f"runner {name!r}: its factory returned {type(runner).__name__}, not a Runner")
    return runner


def runner_needs_model(name: str) -> bool:
    """Whether the runner asks a model (read from the class, or from a factory's ``needs_model``)."""
    return bool(getattr(get_runner_class(name), "needs_model", False))


def runner_model_api(name: str | None) -> str | None:
    """The one endpoint API a runner speaks (its ``model_api``), or None when it takes ``--osworld-model-api``'s."""
    if not name:
        return None
    try:
        api = getattr(get_runner_class(name), "model_api", None)
    except (UnknownRunner, BrokenRunner):
        return None  # check_agent reports it
    return api if isinstance(api, str) else None


def check_agent(settings: Any) -> RunnerSource:
    """Session-start checks of the agent settings, before any sandbox: the runner exists, has the
    model it needs, and supports the observation type. Raises an :class:`OsworldError` naming the fix.
    """
    if not settings.loop.agent:
        raise UnknownRunner(f"no runner chosen; set --osworld-agent to one of: {', '.join(runner_names())}")
    source = get_runner_class(settings.loop.agent)
    if getattr(source, "needs_model", False) and not settings.model.url:
        raise ModelConfigError(
            f"the {settings.loop.agent} runner needs a model endpoint; set --osworld-model-url and --osworld-model"
        )
    api = getattr(source, "model_api", None)
    if api is not None and settings.given("model_api") and settings.model.api != api:
        raise ModelConfigError(
            f"the {settings.loop.agent} runner speaks the {api} API; --osworld-model-api {settings.model.api} names "
            f"another (leave it out, or set it to {api})"
        )
    supported = getattr(source, "supported_observations", None)
    if supported is not None and settings.loop.observation not in supported:
        raise OsworldError(
            f"the {settings.loop.agent} runner does not support --osworld-observation {settings.loop.observation}; "
            f"use one of: {', '.join(sorted(supported))}"
        )
    return source
