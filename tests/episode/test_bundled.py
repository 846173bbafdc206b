"""The bundled tasks prove the environment and the evaluators: the oracle scores 1 on each, the null control 0."""

from __future__ import annotations

import json

import pytest

from tests.episode.runs import BUNDLED, run_tasks

pytestmark = pytest.mark.docker


def test_oracle_passes_every_bundled_task(pytester: pytest.Pytester) -> None:
    count = len(BUNDLED.read_text().splitlines())
    assert count >= 12
    run = run_tasks(pytester, BUNDLED, "-n", "2", "--osworld-agent", "oracle")
    run.result.assert_outcomes(passed=count)
    records = run.records()
    assert len(records) == count
    assert {r["score"] for r in records.values()} == {1.0}
    assert {r["termination"] for r in records.values()} <= {"done", "fail"}
    infeasible = [k for k, r in records.items() if "infeasible" in r["markers"]]
    assert infeasible and all(records[k]["termination"] == "fail" for k in infeasible)
    domains = {r["domain"] for r in records.values()}
    assert {"os", "libreoffice_calc", "libreoffice_writer", "chrome", "multi_apps"} <= domains
    summary = run.summary()
    assert json.dumps(summary)  # written and readable
    assert run.result.ret == 0


def test_null_control_scores_zero_on_every_bundled_task(pytester: pytest.Pytester) -> None:
    count = len(BUNDLED.read_text().splitlines())
    run = run_tasks(pytester, BUNDLED, "-n", "2", "--osworld-agent", "null")
    run.result.assert_outcomes(failed=count)
    records = run.records()
    assert len(records) == count
    for key, record in records.items():
        assert record["score"] == 0.0, key
        assert record["termination"] == "done", key
        assert record["steps"] == 1, key
