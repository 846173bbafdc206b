"""Summary figures from hand-made records; every expected number is worked out by hand below."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.record import TaskResult, Termination
from pytest_osworld.results.store import StoreError
from pytest_osworld.results.summary import build_summary, load_summary, summarize_run, write_summary
from tests.results.helpers import manifest, record, write_run

T = Termination


def records() -> list[TaskResult]:
    return [
        record(
            "os/a",
            1.0,
            usage=(100, 10, 0.5),
            total=10.0,
            started_at="2026-01-01T00:00:00+00:00",
            finished_at="2026-01-01T00:00:10+00:00",
        ),
        record("os/b", 0.5, T.MAX_STEPS, usage=(200, 20, None), total=20.0),
        record("os/c", 0.0, T.FAIL, total=30.0, finished_at="2026-01-01T00:01:40+00:00"),
        record("chrome/d", None, T.SANDBOX_ERROR, message="no docker"),
        record("chrome/e", None, T.UNSUPPORTED, message="needs Google Drive credentials", gdrive=True),
        record("chrome/f", 1.0, gdrive=True, usage=(1, 1, 0.25)),
        record("chrome/g", None, T.MODEL_ERROR),
    ]


SELECTED = ["os/a", "os/b", "os/c", "os/h", "chrome/d", "chrome/e", "chrome/f", "chrome/g"]


@pytest.fixture
def summary() -> dict[str, Any]:
    recs = {r.key: r for r in records()}
    # chrome/g needs Google Drive per the manifest only (its record has no marker).
    return build_summary(recs, manifest("run-1", SELECTED, gdrive=["chrome/g"]), run_id="run-1")


def test_all_view_counts_masks_as_failures(summary: dict[str, Any]) -> None:
    # valid a b c f (4) + masked d g (2) = 6; successes a f; scores 1 + .5 + 0 + 1 = 2.5; e (skipped) apart.
    v = summary["views"]["all"]
    assert (v["episodes"], v["successes"], v["masked"], v["skipped"]) == (6, 2, 2, 1)
    assert v["success_rate"] == pytest.approx(2 / 6)
    assert v["score_sum"] == pytest.approx(2.5)
    assert v["raw_rate"] == pytest.approx(2.5 / 6)


def test_valid_view_leaves_masks_out(summary: dict[str, Any]) -> None:
    v = summary["views"]["valid"]
    assert (v["episodes"], v["successes"], v["masked"], v["masked_apart"]) == (4, 2, 0, 2)
    assert v["success_rate"] == pytest.approx(0.5)
    assert v["raw_rate"] == pytest.approx(2.5 / 4)


def test_no_gdrive_view_leaves_drive_tasks_out(summary: dict[str, Any]) -> None:
    # e f (record markers) and g (manifest) need Drive: left are a b c (valid) and d (masked).
    v = summary["views"]["no_gdrive"]
    assert (v["episodes"], v["successes"], v["masked"], v["skipped"]) == (4, 1, 1, 0)
    assert v["success_rate"] == pytest.approx(0.25)
    assert v["raw_rate"] == pytest.approx(1.5 / 4)


def test_masks_skips_and_domains(summary: dict[str, Any]) -> None:
    assert summary["masks"] == {"model_error": 1, "sandbox_error": 1}
    assert summary["skips"] == {"needs Google Drive credentials": 1}
    chrome, os_ = summary["domains"]["chrome"], summary["domains"]["os"]
    assert (chrome["all"]["episodes"], chrome["all"]["successes"], chrome["all"]["skipped"]) == (3, 1, 1)
    assert (chrome["valid"]["episodes"], chrome["valid"]["success_rate"]) == (1, 1.0)
    assert (os_["all"]["episodes"], os_["all"]["successes"]) == (3, 1)
    assert os_["all"]["raw_rate"] == pytest.approx(0.5)


def test_integrity(summary: dict[str, Any]) -> None:
    i = summary["integrity"]
    assert (i["selected"], i["recorded"], i["finished"]) == (8, 7, 6)
    assert (i["passed"], i["failed"], i["masked"], i["skipped"]) == (2, 2, 2, 1)
    assert i["missing"] == ["os/h"]
    assert i["unexpected"] == [] and i["duplicates"] == []
    assert i["complete"] is False


def test_duplicates_and_unexpected_records() -> None:
    recs = {r.key: r for r in [record("os/x", 1.0), record("chrome/x", 0.0), record("os/y", 1.0)]}
    i = build_summary(recs, manifest("r", ["os/x", "os/y"]))["integrity"]
    assert i["duplicates"] == ["chrome/x", "os/x"]
    assert i["unexpected"] == ["chrome/x"]


def test_usage_durations_and_identity(summary: dict[str, Any]) -> None:
    assert summary["usage"] == {"prompt_tokens": 301, "completion_tokens": 31, "cost": 0.75}
    total = summary["durations"]["phases"]["total"]
    assert total == {"sum_seconds": 60.0, "mean_seconds": 20.0, "episodes": 3}
    assert summary["durations"]["wall_seconds"] == 100.0
    ident = summary["identity"]
    assert ident["run_id"] == "run-1" and ident["input_sha256"] == "a" * 64
    assert ident["ids_sha256"] == manifest("run-1", SELECTED)["selected"]["ids_sha256"]


def test_task_table_feeds_the_gate(summary: dict[str, Any]) -> None:
    assert summary["tasks"]["os/b"] == {
        "status": "failed",
        "score": 0.5,
        "termination": "max_steps",
        "domain": "os",
        "needs_gdrive": False,
    }
    assert summary["tasks"]["chrome/g"]["status"] == "masked" and summary["tasks"]["chrome/g"]["needs_gdrive"]


def test_empty_views_have_no_rate() -> None:
    s = build_summary({}, manifest("r", ["os/a"]))
    assert s["views"]["all"]["success_rate"] is None and s["integrity"]["missing"] == ["os/a"]


def test_summarize_a_run_folder_and_read_it_back(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run-1", records(), SELECTED)
    (run / "os" / "broken").mkdir()
    (run / "os" / "broken" / "result.json").write_text("{")
    with pytest.warns(UserWarning, match="broken"):
        summary = summarize_run(run)
    assert summary["views"]["all"]["episodes"] == 6
    assert len(summary["integrity"]["unreadable"]) == 1
    path = write_summary(run, summary)
    assert load_summary(path)["views"] == summary["views"]
    assert load_summary(run)["views"] == summary["views"]  # a run folder works too


def test_errors_name_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such run folder"):
        summarize_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="not a run folder"):
        summarize_run(tmp_path / "empty")
    with pytest.raises(StoreError, match="report summarize"):
        load_summary(tmp_path / "empty")
    (tmp_path / "x.json").write_text('{"kind": "other"}')
    with pytest.raises(StoreError, match="not a pytest-osworld summary"):
        load_summary(tmp_path / "x.json")
