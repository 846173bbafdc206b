"""Every exception class of the package is an ``OsworldError`` (a message for a user, no traceback),
except the few below, each of which never reaches a user. A new error class that is not one fails here."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest_osworld
from pytest_osworld.errors import OsworldError

# Not OsworldErrors, each with why it never reaches a user.
ALLOWED = {
    # The episode's own control flow: raised and caught inside Episode.run, which records the mask or the 0.
    "pytest_osworld.episode._Masked": "caught by the episode, which records the mask",
    "pytest_osworld.episode._ScoreZero": "caught by the episode, which records the score 0",
    # A metric's control flow: caught by the metric itself, which scores the mismatch 0.
    "pytest_osworld.evaluation.metrics.slides._Mismatch": "caught by the slide metric: a score of 0",
    # A model's answer that does not parse: the runner records it in the step (parse_error) and the model
    # is told; the oracle words it as a TaskInputError. Never leaves agents/.
    "pytest_osworld.agents.parsing.ParseError": "recorded in the step by the runner that parsed the answer",
    "pytest_osworld.agents.native.actions.ActionError": "recorded in the step by the native runner",
    # The model transport's own: turned into ModelError / ModelConfigError before it leaves models/.
    "pytest_osworld.models.transport.BadAnswer": "turned into RequestFailed by the transport",
    "pytest_osworld.models.transport.RequestFailed": "turned into ModelError or ModelConfigError",
    # The mock services' HTTP handlers (in their containers): each becomes the HTTP answer to the client.
    "pytest_osworld.servers.base.HttpError": "a mock service's HTTP error answer",
    "pytest_osworld.servers.forge.params.ApiError": "the mock forge's HTTP error answer",
    "pytest_osworld.servers.proxy.upstream.ProxyFailure": "the proxy's error answer to its client",
    # The guest API server (inside the guest, with the guest's packages): each becomes an HTTP answer.
    "pytest_osworld.guest.server.commands.CommandTimeout": "the guest API's answer to a command that ran too long",
    "pytest_osworld.guest.server.fields.ApiError": "the guest API's 4xx answer",
    # OSWorld-V2's desktop_env API, raised into a V2 task's own code (upstream's controllers raise
    # RuntimeErrors); V2Episode names any error of the task's code as the task's.
    "pytest_osworld.v2.api.gitlab.ImportTimeout": "raised into the V2 task's own code",
    # The live page's bridge: each ends one browser view's connection, never the run.
    "pytest_osworld.live.rfb.RfbRefused": "ends the one watch view whose client sent what the bridge refuses",
    "pytest_osworld.live.websocket.WebSocketClosed": "ends the one watch view whose websocket closed",
    # A warning, issued with warnings.warn (pytest shows it in the warnings summary), never raised.
    "pytest_osworld.results.store.ResultFileWarning": "a warning, never raised",
}

PACKAGE = Path(pytest_osworld.__file__).parent
# Modules that cannot be imported outside the guest (flask, Xlib: the guest image's packages) or that
# run a program when imported: their classes are read from the source instead.
NOT_IMPORTED = ("pytest_osworld.guest.server", "pytest_osworld.cli.__main__")


def _module_names() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(pytest_osworld.__path__, "pytest_osworld.")]


def _classes(owner: ModuleType | type, module: str) -> list[type]:
    """The classes defined in a module, their nested classes included."""
    found = []
    for value in vars(owner).values():
        if inspect.isclass(value) and value.__module__ == module and value not in found:
            found.append(value)
            found += [c for c in _classes(value, module) if c is not value]
    return found


def _source_exceptions(module: str) -> list[str]:
    """The exception classes a module's source defines (builtin exception bases, or its own ones)."""
    relative = Path(*module.split(".")[1:])
    path = PACKAGE / relative / "__init__.py" if (PACKAGE / relative).is_dir() else PACKAGE / f"{relative}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exceptions: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or node.name in exceptions:
                continue
            bases = {
                b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases
            }
            builtin = {b for b in bases if isinstance(getattr(builtins, b, None), type)}
            if bases & exceptions or any(issubclass(getattr(builtins, b), BaseException) for b in builtin):
                exceptions.add(node.name)
                changed = True
    return sorted(f"{module}.{name}" for name in exceptions)


def test_every_error_class_is_an_osworld_error_or_allowed() -> None:
    not_osworld: set[str] = set()
    for name in _module_names():
        if name.startswith(NOT_IMPORTED):
            not_osworld.update(_source_exceptions(name))
            continue
        module = importlib.import_module(name)
        for cls in _classes(module, name):
            if issubclass(cls, BaseException) and not issubclass(cls, OsworldError):
                not_osworld.add(f"{name}.{cls.__qualname__}")
    unexpected = sorted(not_osworld - set(ALLOWED))
    assert not unexpected, (
        "errors a user may see derive from pytest_osworld.errors.OsworldError (keep other bases beside it); "
        f"an internal one goes in ALLOWED with why it never reaches a user: {unexpected}"
    )
    assert not set(ALLOWED) - not_osworld, (
        f"ALLOWED names classes that are gone or OsworldErrors now: {set(ALLOWED) - not_osworld}"
    )


def test_the_source_reader_finds_the_guest_servers_errors() -> None:
    """The classes read from source (not imported) are found, so a new one there would fail above."""
    found = _source_exceptions("pytest_osworld.guest.server.fields")
    assert "pytest_osworld.guest.server.fields.ApiError" in found
