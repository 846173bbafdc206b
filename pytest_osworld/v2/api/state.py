"""The running V2 task, as the module-level helpers of the task API reach it.

Task files call plain functions (``build_website_url(slug)``, ``asset(path)``, ``generate_text(...)``)
that upstream backs with process-wide settings. Here they read the task being loaded or run from a
context variable, so two tasks never share a website cookie, a cache folder or a judge scope.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_osworld.errors import OsworldError
from pytest_osworld.services.access import ServiceAccess

if TYPE_CHECKING:
    from pytest_osworld.setup.context import TaskContext
    from pytest_osworld.v2.llm.judge import JudgeScope

WEBSITE_SERVICE = "website"
GITLAB_SERVICES = ("gitlab", "forge")


class RuntimeUnavailable(OsworldError):
    """A task API helper was called where it cannot work (no running task, a service it does not hold)."""


@dataclass
class TaskRuntime:
    """One V2 task's view of the run: its services (known at load), then its sandbox (while it runs)."""

    task_id: str
    services: Mapping[str, ServiceAccess] = field(default_factory=dict)
    file_base: str | None = None  # OSWORLD_FILE_BASE_URL's value for asset()
    cache_dir: Path | None = None
    context: TaskContext | None = None  # None while the task file is being imported
    judge: JudgeScope | None = None
    env: Any = None  # the evaluators' env, once the episode has built it
    # Judge calls that could not even be made (no judge in this run): they mask the task as failed ones do.
    judge_problems: list[str] = field(default_factory=list)

    def service(self, name: str, what: str) -> ServiceAccess:
        found = self.services.get(name)
        if found is None:
            held = ", ".join(sorted(self.services)) or "none"
            raise RuntimeUnavailable(
                f"task {self.task_id}: {what} needs the shared service {name!r}, which the task does not hold "
                f"(it holds: {held}); define it under services: in the profile (docs/services.md)"
            )
        return found

    def website(self, slug: str | None, what: str) -> ServiceAccess:
        """The service behind a site: one named after the slug when held, else the ``website`` service."""
        if slug and slug in self.services:
            return self.services[slug]
        return self.service(WEBSITE_SERVICE, what)

    def gitlab(self, what: str) -> ServiceAccess:
        for name in GITLAB_SERVICES:
            if name in self.services:
                return self.services[name]
        return self.service(GITLAB_SERVICES[0], what)

    def running(self, what: str) -> TaskContext:
        if self.context is None:
            raise RuntimeUnavailable(f"task {self.task_id}: {what} works only while the task runs, not at import")
        return self.context


_CURRENT: ContextVar[TaskRuntime | None] = ContextVar("osworld_v2_task", default=None)


def current(what: str) -> TaskRuntime:
    """The task being loaded or run in this context; a clear error outside one."""
    found = _CURRENT.get()
    if found is None:
        raise RuntimeUnavailable(f"{what} is called outside a running OSWorld-V2 task")
    return found


@contextmanager
def active(runtime: TaskRuntime) -> Iterator[TaskRuntime]:
    token = _CURRENT.set(runtime)
    try:
        yield runtime
    finally:
        _CURRENT.reset(token)
