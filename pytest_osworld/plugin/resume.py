"""``--osworld-resume RUN_DIR``: continue an earlier run in its own folder, running only what it lacks.

At configure time the session becomes that run (its id, its folder); after selection the task items
(v1 and V2) whose episode already has a valid record there are deselected; a masked one runs again. The
manifest's start then keeps what the earlier sessions selected, and says which episodes were resumed.
A changed task input (the v1 input's SHA-256, a V2 task file's) is a usage error: the earlier scores
would not be of the same tasks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_osworld.errors import OsworldError
from pytest_osworld.plugin.items import OsworldItem
from pytest_osworld.plugin.run import OsworldRun, get_run
from pytest_osworld.results.manifest import RunManifest, read_manifest
from pytest_osworld.results.store import MANIFEST, RunStore
from pytest_osworld.tasks.digest import input_sha256


@dataclass
class Resumed:
    """The earlier run being continued, and the items this session does not run again."""

    earlier: RunManifest
    items: list[OsworldItem] = field(default_factory=list)
    refused: bool = False  # the resume was refused: this session must not touch the run's files

    @property
    def keys(self) -> list[str]:
        return sorted(item.run_key for item in self.items)


_RESUMED = pytest.StashKey["Resumed | None"]()


def configure(config: pytest.Config, run: OsworldRun) -> None:
    """Adopt the run to continue; every problem with it is a usage error before anything runs."""
    config.stash[_RESUMED] = None
    if run.settings.reports.resume is None:
        return
    run_dir = Path(run.settings.reports.resume).resolve()
    if not (run_dir / MANIFEST).is_file():
        raise pytest.UsageError(
            f"--osworld-resume {run_dir}: not a run folder (no {MANIFEST}); give <report_dir>/<run_id> of the run to continue"
        )
    if run.settings.reports.run_id and run.settings.reports.run_id != run_dir.name:
        raise pytest.UsageError(
            f"--osworld-resume {run_dir} continues run {run_dir.name}, but --osworld-run-id says "
            f"{run.settings.reports.run_id}; give one of them"
        )
    try:
        earlier = read_manifest(run_dir)
    except OsworldError as exc:
        raise pytest.UsageError(f"--osworld-resume: {exc}") from None
    assert earlier is not None, "the manifest's presence was checked above"
    run.continue_run(run_dir)
    config.stash[_RESUMED] = Resumed(earlier)


def state(config: pytest.Config) -> Resumed | None:
    """The run being continued, or None in a session that resumes nothing."""
    return config.stash.get(_RESUMED, None)


def refused(config: pytest.Config) -> bool:
    """Whether this session refused to resume (pytest still calls the hooks after collection then, and
    they must leave the earlier run's manifest as it was)."""
    resumed = state(config)
    return resumed is not None and resumed.refused


def deselect_done(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the task items whose episode already has a valid record in the resumed run."""
    resumed = state(config)
    tasks = [item for item in items if isinstance(item, OsworldItem)]
    if resumed is None or not tasks:
        return
    resumed.refused = True  # until the checks below pass
    run = get_run(config)
    before, now = resumed.earlier.input.input_sha256, input_sha256(run.entries) if run.entries else None
    if before and now and before != now:
        raise pytest.UsageError(
            f"--osworld-resume {run.run_dir}: the task input changed since that run (input SHA-256 "
            f"{before[:12]} then, {now[:12]} now); resume with the same task file, or start a new run"
        )
    earlier_v2 = resumed.earlier.v2.hashes if resumed.earlier.v2 else {}
    changed = sorted(name for name, sha in run.v2_hashes.items() if name in earlier_v2 and earlier_v2[name] != sha)
    if changed:
        raise pytest.UsageError(
            f"--osworld-resume {run.run_dir}: V2 task file(s) changed since that run: {', '.join(changed)} "
            "(SHA-256 differs from the run manifest's); resume with the same files, or start a new run"
        )
    resumed.refused = False
    valid = RunStore(run.run_dir).valid_keys()
    done = [item for item in tasks if item.run_key in valid]
    if done:
        config.hook.pytest_deselected(items=done)
        gone = {id(item) for item in done}
        items[:] = [item for item in items if id(item) not in gone]
    resumed.items = done
