"""Merging shard runs: two shards give the unsharded summary; overlaps and mismatches are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_osworld.cli import main
from pytest_osworld.record import TaskResult, Termination
from pytest_osworld.results.merge import MergeError, merge_runs
from pytest_osworld.results.summary import summarize_run
from pytest_osworld.tasks.shard import Shard
from tests.results.helpers import PNG, record, write_run

T = Termination


def all_records() -> list[TaskResult]:
    return [
        record("os/a", 1.0, usage=(10, 1, None), total=3.0),
        record("os/b", 0.5, T.MAX_STEPS, total=4.0),
        record("os/c", 0.0, T.FAIL),
        record("os/c#r2", 1.0),
        record("chrome/d", None, T.SANDBOX_ERROR),
        record("chrome/e", None, T.UNSUPPORTED, message="needs Google Drive credentials", gdrive=True),
        record("chrome/f", 1.0, gdrive=True),
        record("vlc/g", 0.25, T.TIMEOUT, usage=(5, 5, None)),
    ]


def shard_runs(tmp_path: Path, count: int = 2) -> list[Path]:
    recs = all_records()
    dirs = []
    for index in range(1, count + 1):
        chosen = Shard(index, count).select(r.key for r in recs)
        mine = [r for r in recs if r.key in chosen]
        dirs.append(write_run(tmp_path / f"shard{index}", mine, shard=f"{index}/{count}"))
    return dirs


COMPARED = ("views", "masks", "skips", "domains", "usage", "tasks")


def test_two_shards_merge_into_the_unsharded_summary(tmp_path: Path) -> None:
    whole = summarize_run(write_run(tmp_path / "whole", all_records()))
    shards = shard_runs(tmp_path)
    (shards[0] / "os").mkdir(exist_ok=True)
    report = merge_runs(shards, tmp_path / "merged")

    merged = json.loads((tmp_path / "merged" / "summary.json").read_text())
    for key in COMPARED:
        assert merged[key] == whole[key], key
    assert merged["durations"]["phases"] == whole["durations"]["phases"]
    for key in ("selected", "recorded", "finished", "missing", "duplicates"):
        assert merged["integrity"][key] == whole["integrity"][key], key
    assert merged["identity"]["ids_sha256"] == whole["identity"]["ids_sha256"]
    assert merged["identity"]["input_sha256"] == whole["identity"]["input_sha256"]
    assert [m["shard"] for m in merged["identity"]["merged_from"]] == ["1/2", "2/2"]
    assert report.missing == [] and report.missing_shards == []
    # The task folders came along; the shards are untouched.
    assert (tmp_path / "merged" / "os" / "c#r2" / "result.json").is_file()
    assert summarize_run(tmp_path / "merged")["views"] == whole["views"]
    assert (shards[0] / "manifest.json").is_file()


def test_task_files_are_copied_whole(tmp_path: Path) -> None:
    from pytest_osworld.results.store import RunStore

    run = write_run(tmp_path / "s1", [record("os/a", 1.0)], shard="1/2")
    RunStore(run).write_final_screenshot("os/a", PNG)
    write_run(tmp_path / "s2", [record("os/b", 0.0)], shard="2/2")
    merge_runs([tmp_path / "s1", tmp_path / "s2"], tmp_path / "out")
    assert (tmp_path / "out" / "os" / "a" / "final.png").read_bytes() == PNG
    assert (tmp_path / "out" / "os" / "a" / "result.txt").read_text() == "1.0\n"


def test_overlapping_shards_are_refused(tmp_path: Path) -> None:
    write_run(tmp_path / "s1", [record("os/a", 1.0), record("os/b", 0.0)])
    write_run(tmp_path / "s2", [record("os/b", 1.0)])
    with pytest.raises(MergeError, match=r"overlap: 1 tasks are in both \(os/b\)"):
        merge_runs([tmp_path / "s1", tmp_path / "s2"], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_different_inputs_are_refused(tmp_path: Path) -> None:
    write_run(tmp_path / "s1", [record("os/a", 1.0)], input_sha="a" * 64)
    write_run(tmp_path / "s2", [record("os/b", 1.0)], input_sha="b" * 64)
    with pytest.raises(MergeError, match="different task inputs"):
        merge_runs([tmp_path / "s1", tmp_path / "s2"], tmp_path / "out")


def test_other_refusals(tmp_path: Path) -> None:
    write_run(tmp_path / "s1", [record("os/a", 1.0)])
    (tmp_path / "plain").mkdir()
    with pytest.raises(MergeError, match="not a run folder"):
        merge_runs([tmp_path / "s1", tmp_path / "plain"], tmp_path / "out")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    with pytest.raises(MergeError, match="not empty"):
        merge_runs([tmp_path / "s1"], tmp_path / "full")
    assert (tmp_path / "full" / "x").read_text() == "keep me"
    with pytest.raises(MergeError, match="given twice"):
        merge_runs([tmp_path / "s1", tmp_path / "s1"], tmp_path / "out")


def test_cli_merge_reports_missing_ids_and_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path / "s1", [record("os/a", 1.0)], selected=["os/a", "os/x"], shard="1/3")
    write_run(tmp_path / "s2", [record("os/b", 0.0)], shard="2/3")
    assert main(["report", "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "missing shards: 3/3" in out
    assert "1 selected tasks have no record: os/x" in out
    assert main(["report", "merge", str(tmp_path / "s1"), str(tmp_path / "s1b"), "-o", str(tmp_path / "o2")]) == 2
    assert "no such run folder" in capsys.readouterr().err


def test_cli_summarize(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", all_records())
    assert main(["report", "summarize", str(run)]) == 0
    out = capsys.readouterr().out
    assert "all        success       3/7" in out and "masked     1: sandbox_error 1" in out
    assert not (run / "summary.json").exists()
    assert main(["report", "summarize", str(run), "--write", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["views"]["valid"]["episodes"] == 6
    assert (run / "summary.json").is_file()
