"""Lanes for the suite under ``pytest -n N --dist loadgroup`` (a pytest plugin, loaded by tests/conftest.py).

A test's lane is its ``xdist_group`` mark; all tests of one lane run on one worker, the largest lanes first.
pytest-xdist's own ``loadgroup`` finds the lane in a suffix it writes into each item's node id, which
pytest 9.2 no longer lets a plugin change (the id became a structured value): the suffix is silently
dropped and every grouped test is scheduled on its own. So the lanes travel another way: each worker
writes the lane of each collected test to a file the controller named, and the controller's scheduler
(xdist's load-scope scheduler, one work unit per lane) reads them. A suffix xdist did write (pytest 8)
is used as it is.

Lanes are long (shared real runs, QEMU): at most one worker fewer than there are workers holds a lane at
a time, so one worker always takes the single tests meanwhile instead of all of them waiting behind the
lanes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

_KEY = "osworld_test_lanes"


def lane_of(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def _loadgroup(config: pytest.Config) -> bool:
    return bool(config.getoption("dist", "no") == "loadgroup")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Controller: tell each worker where to write its lanes."""
    config: pytest.Config = node.config
    folder = getattr(config, "_osworld_lanes_folder", None)
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix="osworld-test-lanes-"))
        config._osworld_lanes_folder = folder  # type: ignore[attr-defined]
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    node.workerinput[_KEY] = str(folder)


@pytest.hookimpl(trylast=True)  # after every hook that adds marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Worker: write the lane of each test, keyed by the node id the controller will see."""
    folder = getattr(config, "workerinput", {}).get(_KEY)
    if folder is None:
        return
    lanes = {item.nodeid: lane for item in items if (lane := lane_of(item)) is not None}
    target = Path(folder) / f"{config.workerinput['workerid']}.json"  # type: ignore[attr-defined]
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps(lanes))
    os.replace(partial, target)  # the controller reads a whole file or none


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if not _loadgroup(config):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LaneScheduling(LoadScopeScheduling):  # type: ignore[misc]
        _lanes: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if nodeid.rfind("@") > nodeid.rfind("]"):  # xdist wrote the lane into the id
                return nodeid.rsplit("@", 1)[1]
            if self._lanes is None:
                self._lanes = read_lanes(config)
            return self._lanes.get(nodeid, nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            holding = sum(
                1
                for other, work in self.assigned_work.items()
                if other is not node and any(is_lane(scope) and not all(done.values()) for scope, done in work.items())
            )
            if holding >= max(1, len(self.nodes) - 1):  # enough workers in lanes: this one takes a single test
                single = next((scope for scope in self.workqueue if not is_lane(scope)), None)
                if single is not None:
                    self.workqueue.move_to_end(single, last=False)
            super()._assign_work_unit(node)

    return LaneScheduling(config, log)


def is_lane(scope: str) -> bool:
    """A work unit of the scheduler is a lane's name or one test's node id (which always has '::')."""
    return "::" not in scope


def read_lanes(config: pytest.Config) -> dict[str, str]:
    """Every worker collects the same tests (xdist checks it); their files are read together."""
    folder: Path | None = getattr(config, "_osworld_lanes_folder", None)
    lanes: dict[str, str] = {}
    if folder is not None:
        for path in sorted(folder.glob("*.json")):
            lanes.update(json.loads(path.read_text()))
    return lanes
