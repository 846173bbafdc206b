"""Importing a V2 task file, with the task API in place, and finding its task as upstream's loader does.

Two modes:

- **the project's API** (default): while the file is imported (and while its task's ``setup`` and
  ``evaluate`` run, which may import lazily), ``desktop_env`` and ``evaluation_examples`` (with their
  submodules) resolve to :mod:`pytest_osworld.v2.upstream.desktop_env` and
  :mod:`pytest_osworld.v2.upstream.evaluation_examples` through a meta-path finder that is removed afterwards;
- **the user's checkout** (``--osworld-v2-code PATH``): the checkout goes first on ``sys.path`` and its
  own ``desktop_env`` is imported, with ``WEBSITE_HOST_SUFFIX``, ``GITLAB_URL``,
  ``GITLAB_PRIVATE_TOKEN`` and ``OSWORLD_FILE_BASE_URL`` set from the run's services before any import,
  and the working folder the checkout while the file loads (upstream reads files relative to it).

Either way the module is imported under upstream's name, ``osworld_task_task_<id>``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_osworld.errors import OsworldError
from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.v2.api.checkout_calls import count_checkout_calls

# Upstream's packages that task files import, each with the project's package that stands in for it.
OWN_PACKAGES = {
    "desktop_env": "pytest_osworld.v2.upstream.desktop_env",
    "evaluation_examples": "pytest_osworld.v2.upstream.evaluation_examples",
}
UPSTREAM_ROOTS = tuple(OWN_PACKAGES)
MODULE_PREFIX = "osworld_task_task_"
GITLAB_NAMES = ("gitlab", "forge")


class TaskLoadError(OsworldError):
    """A task file could not be imported, or holds no task: the task cannot be set up."""


def _own_name(fullname: str) -> str | None:
    for root, own in OWN_PACKAGES.items():
        if fullname == root or fullname.startswith(root + "."):
            return own + fullname[len(root) :]
    return None


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``desktop_env.x`` -> the module ``pytest_osworld.v2.upstream.desktop_env.x`` itself (and so for
    ``evaluation_examples``)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        own = _own_name(fullname)
        if own is None or importlib.util.find_spec(own) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        own = _own_name(spec.name)
        assert own is not None
        return importlib.import_module(own)

    def exec_module(self, module: ModuleType) -> None:
        """The module is the project's, already executed."""


def _drop_modules(roots: Sequence[str], keep: Mapping[str, ModuleType] | None = None) -> None:
    for name in [n for n in sys.modules if any(n == r or n.startswith(r + ".") for r in roots)]:
        if keep is None or name not in keep:
            del sys.modules[name]


@contextmanager
def own_api() -> Iterator[None]:
    """``desktop_env`` and ``evaluation_examples`` resolve to the project's API for the block (nested
    blocks are fine)."""
    finder = _AliasFinder()
    previous = {n: m for n, m in sys.modules.items() if _own_name(n) is not None}
    _drop_modules(UPSTREAM_ROOTS)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        _drop_modules(UPSTREAM_ROOTS)
        sys.modules.update(previous)


def checkout_environment(services: Mapping[str, ServiceAccess], file_base: str | None) -> dict[str, str]:
    """The variables upstream's ``desktop_env`` reads at import, from the run's services."""
    found: dict[str, str] = {}
    website = services.get("website")
    if website is not None:
        found["WEBSITE_HOST_SUFFIX"] = website.hostname.partition(".")[2] or website.hostname
    for name in GITLAB_NAMES:
        gitlab = services.get(name)
        if gitlab is not None:
            found["GITLAB_URL"] = gitlab.url()
            if gitlab.token:
                found["GITLAB_PRIVATE_TOKEN"] = gitlab.token
            break
    if file_base:
        found["OSWORLD_FILE_BASE_URL"] = file_base
    return found


@contextmanager
def checkout_api(checkout: Path, environ: Mapping[str, str], *, chdir: bool = False) -> Iterator[None]:
    """The user's checkout first on ``sys.path``, its ``desktop_env`` fresh, ``environ`` set (and the
    working folder the checkout with ``chdir``), all restored after the block."""
    root = str(checkout.resolve())
    saved_env = {k: os.environ.get(k) for k in environ}
    saved_cwd = os.getcwd()
    roots = UPSTREAM_ROOTS
    previous = {n: m for n, m in sys.modules.items() if any(n == r or n.startswith(r + ".") for r in roots)}
    _drop_modules(roots)
    os.environ.update(environ)
    sys.path.insert(0, root)
    importlib.invalidate_caches()
    try:
        if chdir:
            os.chdir(root)
        count_checkout_calls()  # before any task module can bind the checkout's judge calls
        yield
    finally:
        os.chdir(saved_cwd)
        if root in sys.path:
            sys.path.remove(root)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        _drop_modules(roots)
        sys.modules.update(previous)


@dataclass(frozen=True)
class ApiMode:
    """Which ``desktop_env`` a task runs against: the project's (``checkout`` None) or a checkout's."""

    checkout: Path | None = None
    environ: Mapping[str, str] | None = None

    @contextmanager
    def api(self, *, loading: bool = False) -> Iterator[None]:
        if self.checkout is None:
            with own_api():
                yield
        else:
            with checkout_api(self.checkout, self.environ or {}, chdir=loading):
                yield


def module_name(task_id: str) -> str:
    return MODULE_PREFIX + task_id


def import_task_module(path: Path, task_id: str) -> ModuleType:
    """Import the file under upstream's module name (the caller has the API in place)."""
    name = module_name(task_id)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskLoadError(f"{path}: task {task_id}: not importable as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the task's own code: any error is the task's, named
        sys.modules.pop(name, None)
        where = _where(exc, path)
        raise TaskLoadError(
            f"{path}{where}: task {task_id}: importing the task file failed: {type(exc).__name__}: {exc}; "
            "fix the file, or run it against its own code with --osworld-v2-code"
        ) from None
    return module


def _where(exc: BaseException, path: Path) -> str:
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f":{line}" if line else ""


def _is_task_class(value: Any, module: ModuleType) -> bool:
    return (
        inspect.isclass(value)
        and value.__module__ == module.__name__
        and any(base.__name__ == "BaseTask" for base in value.__mro__[1:])
        and isinstance(value, type)
        and issubclass(value, dict)
    )


def find_task(module: ModuleType, path: Path, task_id: str) -> Any:
    """The task instance, in upstream's loader order: ``get_task()``, ``TASK_CLASS``, ``Task``, the
    first class of the file derived from ``BaseTask``."""
    found: Any = None
    getter = getattr(module, "get_task", None)
    if callable(getter):
        found = getter()
    else:
        for name in ("TASK_CLASS", "Task"):
            if getattr(module, name, None) is not None:
                found = getattr(module, name)
                break
        else:
            found = next((v for v in vars(module).values() if _is_task_class(v, module)), None)
    if inspect.isclass(found):
        found = found()
    if not isinstance(found, dict) or not callable(getattr(found, "evaluate", None)):
        raise TaskLoadError(
            f"{path}: task {task_id}: no task found (get_task(), TASK_CLASS, Task or a BaseTask subclass "
            "giving a BaseTask instance); end the file with TASK_CLASS = <the task class>"
        )
    return found


def load_task(path: Path, task_id: str) -> tuple[ModuleType, Any]:
    """The task file's module and its task instance (the caller has the API in place)."""
    module = import_task_module(path, task_id)
    try:
        return module, find_task(module, path, task_id)
    except TaskLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - get_task() or the class's constructor is the task's code
        raise TaskLoadError(f"{path}: task {task_id}: making the task failed: {type(exc).__name__}: {exc}") from None


def unload(task_id: str) -> None:
    sys.modules.pop(module_name(task_id), None)
