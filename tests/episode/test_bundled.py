"""The bundled tasks prove the environment and the evaluators: the oracle scores 1 on each, the null control 0
(read from the session's shared runs of every bundled task, tests/support/bundled_runs.py)."""

from __future__ import annotations

import json

import pytest

from tests.episode.runs import BUNDLED
from tests.support.bundled_runs import task_keys
from tests.support.shared_runs import SharedRun

pytestmark = pytest.mark.docker

EXAMPLES = task_keys(BUNDLED)


def test_oracle_passes_every_bundled_task(bundled_oracle: SharedRun) -> None:
    assert len(EXAMPLES) >= 12
    records = {key: record for key, record in bundled_oracle.records().items() if key in EXAMPLES}
    assert set(records) == EXAMPLES, bundled_oracle.result.stdout.str()
    assert {r["score"] for r in records.values()} == {1.0}
    assert {r["termination"] for r in records.values()} <= {"done", "fail"}
    infeasible = [k for k, r in records.items() if "infeasible" in r["markers"]]
    assert infeasible and all(records[k]["termination"] == "fail" for k in infeasible)
    domains = {r["domain"] for r in records.values()}
    assert {"os", "libreoffice_calc", "libreoffice_writer", "chrome", "multi_apps"} <= domains
    outcomes = bundled_oracle.task_outcomes()
    assert {key: outcomes.get(key) for key in EXAMPLES} == dict.fromkeys(EXAMPLES, "PASSED")
    summary = bundled_oracle.summary()
    assert json.dumps(summary)  # written and readable
    # The README's main job: every bundled task passes, so the run succeeds.
    counts = bundled_oracle.result.parseoutcomes()
    assert set(counts) <= {"passed", "seconds"} and bundled_oracle.result.ret == 0, counts


def test_null_control_scores_zero_on_every_bundled_task(bundled_null: SharedRun) -> None:
    records = {key: record for key, record in bundled_null.records().items() if key in EXAMPLES}
    assert set(records) == EXAMPLES, bundled_null.result.stdout.str()
    for key, record in records.items():
        assert record["score"] == 0.0, key
        assert record["termination"] == "done", key
        assert record["steps"] == 1, key
    outcomes = bundled_null.task_outcomes()
    assert {key: outcomes.get(key) for key in EXAMPLES} == dict.fromkeys(EXAMPLES, "FAILED")
