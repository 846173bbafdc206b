"""The suite's lanes under ``-n N --dist loadgroup`` (tests/support/xdist_groups.py): every test of one
``xdist_group`` runs on one worker, on the pytest this suite runs under (8.x or 9.x)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def run_on_two_workers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str, passed: int
) -> dict[str, Any]:
    """Run ``source`` under ``-n 2 --dist loadgroup`` with the lanes plugin; what each test noted, by name."""
    pytester.makepyfile(test_inner=source)
    seen = pytester.mkdir("seen")
    monkeypatch.setenv("LANES_SEEN", str(seen))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    result = pytester.runpytest_subprocess(
        "-p", "tests.support.xdist_groups", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"
    )
    result.assert_outcomes(passed=passed)
    return {path.stem: json.loads(path.read_text()) for path in Path(seen).glob("*.json")}


def test_a_lanes_tests_run_on_one_worker(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    workers = run_on_two_workers(pytester, monkeypatch, INNER, passed=7)
    lane = {worker for name, worker in workers.items() if name.startswith("lane-")}
    # Seven work units without the lanes would spread over both workers; with them, two units.
    assert len(workers) == 7 and len(lane) == 1 and None not in lane
    assert workers["alone"] not in lane


TWO_LANES = """
import json, os, pathlib, time

import pytest

def _note(name, started):
    path = pathlib.Path(os.environ["LANES_SEEN"]) / f"{name}.json"
    path.write_text(json.dumps([os.environ.get("PYTEST_XDIST_WORKER"), started, time.time()]))

@pytest.mark.parametrize("n", range(3))
@pytest.mark.xdist_group("a")
def test_lane_a(n):
    started = time.time()
    time.sleep(0.3)
    _note(f"a-{n}", started)

@pytest.mark.parametrize("n", range(3))
@pytest.mark.xdist_group("b")
def test_lane_b(n):
    started = time.time()
    time.sleep(0.3)
    _note(f"b-{n}", started)

@pytest.mark.parametrize("n", range(4))
def test_single(n):
    _note(f"single-{n}", time.time())
"""


def test_one_worker_stays_out_of_the_lanes(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two lanes, two workers: one worker takes the single tests while the first lane runs, not both lanes at once."""
    notes = run_on_two_workers(pytester, monkeypatch, TWO_LANES, passed=10)
    spans = {
        lane: (min(notes[f"{lane}-{n}"][1] for n in range(3)), max(notes[f"{lane}-{n}"][2] for n in range(3)))
        for lane in ("a", "b")
    }
    (_, _), (second_start, _) = sorted(spans.values())
    singles = [notes[f"single-{n}"] for n in range(4)]
    # While the first lane ran on one worker, the other took the single tests before the second lane.
    assert all(at <= second_start for _, at, _ in singles), (notes, spans)
