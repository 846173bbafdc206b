"""The state of one pytest-osworld session, and the typed accessors every plugin module uses.

One :class:`OsworldRun` per ``pytest.Config``, made at configure time: the settings, the run's id
and folder, the tasks collected so far, and the owner of the run manifest. Under pytest-xdist every
worker has its own, with the controller's run id.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from pytest_osworld.agents import check_agent
from pytest_osworld.agents.endpoint import make_model_client
from pytest_osworld.errors import TaskInputError, TaskInputErrors
from pytest_osworld.results.manifest import ManifestOwner, V2Input
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.markers import domain_marker_help
from pytest_osworld.tasks.readers import TaskEntry
from pytest_osworld.v2.reading.pins import TaskPins, sha256_file
from pytest_osworld.v2.reading.task_file import V2Task

_RUN = pytest.StashKey["OsworldRun"]()
_GIVEN = pytest.StashKey[set[Path]]()
_DOMAINS = pytest.StashKey[set[str]]()


def new_run_id() -> str:
    # Sortable by time, unique across runs started in the same second.
    return datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


@dataclass
class OsworldRun:
    settings: Settings
    run_id: str
    worker_id: str | None = None  # the xdist worker ("gw0"), None in a plain run
    entries: list[TaskEntry] = field(default_factory=list)
    sources: list[Path] = field(default_factory=list)
    _seen: dict[str, str] = field(default_factory=dict)
    # OSWorld-V2 tasks: collected and pinned here, run by the V2 runtime (plugin/v2.py)
    v2_tasks: list[V2Task] = field(default_factory=list)
    v2_sources: list[Path] = field(default_factory=list)
    v2_hashes: dict[str, str] = field(default_factory=dict)  # task file name -> SHA-256 as collected
    v2_pins: TaskPins | None = None
    # False once collection has ended in a way that runs no test (--collect-only, collection errors)
    runs_tests: bool = True

    @property
    def run_dir(self) -> Path:
        return self.settings.reports.dir / self.run_id

    @property
    def writes_run_files(self) -> bool:
        """One process writes the run-level files: the plain run, or xdist's first worker."""
        return self.worker_id in (None, "gw0")

    @property
    def is_worker(self) -> bool:
        return self.worker_id is not None

    @property
    def manifest(self) -> ManifestOwner:
        """The owner of this run's manifest (its folder follows a resume's change of run id)."""
        return ManifestOwner(self.run_dir, self.run_id)

    def continue_run(self, run_dir: Path) -> None:
        """Become the run in ``run_dir`` (``--osworld-resume``): its id, its folder."""
        self.run_id = run_dir.name
        self.settings = self.settings.replace(report_dir=run_dir.parent, run_id=run_dir.name)

    def _claim(self, ids: list[tuple[str, str]], fix: str) -> None:
        """Note each (task id, origin) as collected; ids collected before are one error listing them all."""
        errors = [
            TaskInputError(origin, f"duplicate task id {task_id}: already collected from {self._seen[task_id]}", fix)
            for task_id, origin in ids
            if task_id in self._seen
        ]
        if errors:
            raise TaskInputErrors(errors)
        for task_id, origin in ids:
            self._seen[task_id] = origin

    def register(self, entries: list[TaskEntry], source: Path) -> None:
        """Add an input's tasks; a task id already collected from another input is an error."""
        self._claim(
            [(e.id, e.origin) for e in entries], "give each task input once, or remove the task from one of them"
        )
        self.entries.extend(entries)
        self.sources.append(source)

    def register_v2(self, tasks: list[V2Task], source: Path) -> None:
        """Add a V2 input's tasks; an id already collected (from either version's inputs) is an error."""
        self._claim(
            [(t.id, t.origin) for t in tasks],
            "give each task input once (a split and its task_class/ folder hold the same tasks)",
        )
        for task in tasks:
            self.v2_hashes[task.file.name] = sha256_file(task.file)
        self.v2_tasks.extend(tasks)
        self.v2_sources.append(source)

    def v2_input(self, selected: set[str]) -> V2Input | None:
        """What the manifest records of the V2 tasks (None when none was collected)."""
        if not self.v2_tasks:
            return None
        pins = self.v2_pins
        return V2Input(
            count=len(self.v2_tasks),
            selected=sorted(selected),
            sources=[str(p) for p in self.v2_sources],
            release=pins.release if pins else None,
            hash_file=str(pins.source) if pins else None,
            hash_file_sha256=pins.file_sha256 if pins else None,
            revision=pins.revision if pins else None,
            hashes=dict(sorted(self.v2_hashes.items())),
        )

    def check_agent(self, *, endpoint: bool) -> None:
        """Before any sandbox starts: the runner exists and can run here; with ``endpoint``, the model
        endpoint answers and serves the model (done once per session, by the controller).
        Raises an :class:`~pytest_osworld.errors.OsworldError` that says what to fix.
        """
        settings = self.settings.replace(agent=self.settings.runner_name)
        source = check_agent(settings)
        if endpoint and getattr(source, "needs_model", False):
            client = make_model_client(settings)
            if client is not None:
                with client:
                    client.check()


def start_run(config: pytest.Config, run: OsworldRun) -> None:
    """Attach the session's run to ``config``, with the paths given on the command line."""
    config.stash[_RUN] = run
    config.stash[_DOMAINS] = set()
    invocation = Path(config.invocation_params.dir)
    config.stash[_GIVEN] = {(invocation / arg.split("::", 1)[0]).resolve() for arg in config.args}


def get_run(config: pytest.Config) -> OsworldRun:
    """The session's run (every pytest-osworld hook and fixture reads its state from here)."""
    return config.stash[_RUN]


def given_paths(config: pytest.Config) -> set[Path]:
    """The paths named on the command line, resolved."""
    return config.stash[_GIVEN]


def register_domain_marker(config: pytest.Config, domain: str) -> None:
    """Declare a domain's marker once, so ``-m DOMAIN`` works with ``--strict-markers``."""
    known = config.stash[_DOMAINS]
    if domain not in known:
        known.add(domain)
        config.addinivalue_line("markers", f"{domain}: {domain_marker_help(domain)}")


def runs_no_test(session: pytest.Session) -> bool:
    """Whether the session lists its tests without running any: ``--collect-only``, or a collection
    error that stops the run before its first test (then nothing only a run needs, such as the engine's
    answers or an image build, is worth waiting for)."""
    config = session.config
    stopped = bool(session.testsfailed) and not config.option.continue_on_collection_errors
    return bool(config.option.collectonly) or stopped
