"""The suite's lanes under ``-n N --dist loadgroup`` (tests/support/xdist_groups.py): every test of one
``xdist_group`` runs on one worker, on the pytest this suite runs under (8.x or 9.x)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.paths import REPO

INNER = """
import json, os, pathlib

import pytest

def _note(name):
    path = pathlib.Path(os.environ["LANES_SEEN"]) / f"{name}.json"
    path.write_text(json.dumps(os.environ.get("PYTEST_XDIST_WORKER")))

@pytest.mark.parametrize("n", range(6))
@pytest.mark.xdist_group("lane")
def test_in_the_lane(n):
    _note(f"lane-{n}")

def test_on_its_own():
    _note("alone")
"""


def test_a_lanes_tests_run_on_one_worker(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_inner=INNER)
    seen = pytester.mkdir("seen")
    monkeypatch.setenv("LANES_SEEN", str(seen))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    result = pytester.runpytest_subprocess(
        "-p", "tests.support.xdist_groups", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"
    )
    result.assert_outcomes(passed=7)
    workers = {path.stem: json.loads(path.read_text()) for path in Path(seen).glob("*.json")}
    lane = {worker for name, worker in workers.items() if name.startswith("lane-")}
    # Seven work units without the lanes would spread over both workers; with them, two units.
    assert len(workers) == 7 and len(lane) == 1 and None not in lane
    assert workers["alone"] not in lane
