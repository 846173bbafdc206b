"""The run store: upstream's layout, atomic writes, tolerance of broken files, keys that stay inside the run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_osworld.record import StepRecord, Termination
from pytest_osworld.results.store import ResultFileWarning, RunStore, StoreError, TaskKey
from tests.results.helpers import PNG, record

UPSTREAM_KEYS = ["step_num", "action_timestamp", "action", "response", "reward", "done", "info", "screenshot_file"]


def step(n: int, **kw: object) -> StepRecord:
    return StepRecord(step_num=n, action_timestamp=f"20260101@00000{n}", action=f"pyautogui.click({n}, 0)", **kw)


def test_upstream_layout_for_a_valid_episode(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run-1")
    assert store.write_step("os/t1", step(1, response="click"), PNG) == "step_1.png"
    assert store.write_step("os/t1", step(2), PNG) == "step_2.png"
    assert store.write_final_screenshot("os/t1", PNG) == "final.png"
    path = store.write_result(record("os/t1", 0.5))

    folder = tmp_path / "run-1" / "os" / "t1"
    assert path == folder / "result.json"
    assert (folder / "result.txt").read_text() == "0.5\n"
    assert (folder / "step_1.png").read_bytes() == PNG
    lines = [json.loads(line) for line in (folder / "traj.jsonl").read_text().splitlines()]
    assert [line["step_num"] for line in lines] == [1, 2]
    assert list(lines[0])[: len(UPSTREAM_KEYS)] == UPSTREAM_KEYS
    assert lines[0]["screenshot_file"] == "step_1.png"
    saved = json.loads(path.read_text())
    assert saved["score"] == 0.5 and saved["termination"] == "done"
    assert saved["artifacts"] == {
        "traj": "traj.jsonl",
        "final_screenshot": "final.png",
        "step_screenshots": ["step_1.png", "step_2.png"],
    }
    assert store.load_results()["os/t1"].score == 0.5


def test_full_score_is_written_as_upstream_prints_it(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.write_result(record("os/t1", 1.0))
    assert (tmp_path / "os" / "t1" / "result.txt").read_text() == "1.0\n"


def test_a_mask_leaves_no_result_txt_and_removes_a_stale_one(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.write_result(record("os/t1", 0.0))
    assert (tmp_path / "os" / "t1" / "result.txt").exists()
    store.write_result(record("os/t1", None, Termination.SANDBOX_LOST, message="gone"))
    assert not (tmp_path / "os" / "t1" / "result.txt").exists()
    assert store.load_results()["os/t1"].masked


def test_repeats_live_in_sibling_folders(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.write_result(record("os/t1", 1.0))
    store.write_result(record("os/t1#r2", 0.0))
    assert (tmp_path / "os" / "t1#r2" / "result.json").is_file()
    loaded = store.load_results()
    assert set(loaded) == {"os/t1", "os/t1#r2"}
    assert loaded["os/t1#r2"].repeat == 2 and loaded["os/t1#r2"].score == 0.0


def test_diagnostics_follow_the_settings(tmp_path: Path) -> None:
    lean = RunStore(tmp_path / "lean", keep_screenshots=False)
    assert lean.write_step("os/t1", step(1), PNG) is None
    assert not list((tmp_path / "lean" / "os" / "t1").glob("*.png"))
    assert json.loads((tmp_path / "lean" / "os" / "t1" / "traj.jsonl").read_text())["screenshot_file"] is None
    assert lean.write_model_io("os/t1", {"request": 1}) is None
    assert lean.write_video("os/t1", b"mp4") is None
    assert sorted(p.name for p in (tmp_path / "lean" / "os" / "t1").iterdir()) == ["traj.jsonl"]

    full = RunStore(tmp_path / "full", keep_model_io=True, keep_video=True, secrets=("s3cr3t-value",))
    assert (
        full.write_model_io("os/t1", {"headers": {"Authorization": "Bearer abcdefgh123"}, "note": "s3cr3t-value"})
        == "model_io.jsonl"
    )
    assert full.write_video("os/t1", b"mp4") == "recording.mp4"
    text = (tmp_path / "full" / "os" / "t1" / "model_io.jsonl").read_text()
    assert "abcdefgh123" not in text and "s3cr3t-value" not in text
    assert json.loads(text) == {"headers": {"Authorization": "***"}, "note": "***"}


def test_secrets_never_reach_the_record_or_the_trajectory(tmp_path: Path) -> None:
    store = RunStore(tmp_path, secrets=("hunter2-key",))
    store.write_step("os/t1", step(1, response="using hunter2-key", info={"api_key": "zzz"}), None)
    r = record("os/t1", 0.0, message="GET http://bob:pa55word@proxy:3128 failed with hunter2-key")
    r.model = {"name": "m", "api_key": "hunter2-key"}
    store.write_result(r)
    folder = tmp_path / "os" / "t1"
    for name in ("traj.jsonl", "result.json"):
        text = (folder / name).read_text()
        assert "hunter2-key" not in text and "pa55word" not in text and "zzz" not in text, name
    assert store.load_results()["os/t1"].message == "GET http://***@proxy:3128 failed with ***"


def test_a_failed_write_keeps_the_old_record_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = RunStore(tmp_path)
    store.write_result(record("os/t1", 1.0))
    before = (tmp_path / "os" / "t1" / "result.json").read_text()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(StoreError, match=r"could not write os/t1's files in .*--osworld-resume") as refused:
        store.write_result(record("os/t1", 0.0, Termination.FAIL))
    assert isinstance(refused.value.__cause__, OSError)
    monkeypatch.undo()
    assert (tmp_path / "os" / "t1" / "result.json").read_text() == before
    assert sorted(p.name for p in (tmp_path / "os" / "t1").iterdir()) == ["result.json", "result.txt"]
    assert store.load_results()["os/t1"].score == 1.0


def test_broken_files_are_skipped_with_a_warning(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.write_result(record("os/good", 1.0))
    for name, content in {
        "empty": "",
        "torn": '{"schema_version": 1, "run_id": "r", "task_id": "torn", "dom',
        "garbage": "\x00\x01 not json",
        "wrong": json.dumps({"hello": "world"}),
    }.items():
        (tmp_path / "os" / name).mkdir(parents=True)
        (tmp_path / "os" / name / "result.json").write_text(content)
    # A record in another task's folder, a temp file of an interrupted write, an earlier attempt.
    (tmp_path / "os" / "moved").mkdir()
    (tmp_path / "os" / "moved" / "result.json").write_text(record("os/elsewhere", 1.0).model_dump_json())
    (tmp_path / "os" / "good" / ".result.json.abc.tmp").write_text("{")
    superseded = tmp_path / "_superseded" / "os" / "good" / "1"
    superseded.mkdir(parents=True)
    (superseded / "result.json").write_text(record("os/good", 0.0).model_dump_json())

    with pytest.warns(ResultFileWarning) as caught:
        loaded = store.load_results()

    assert list(loaded) == ["os/good"] and loaded["os/good"].score == 1.0
    assert len(caught) == 5
    problems = {p.path.parent.name: p.problem for p in store.problems}
    assert set(problems) == {"empty", "torn", "garbage", "wrong", "moved"}
    assert "empty" in problems["empty"]
    assert "not valid JSON" in problems["torn"]
    assert "os/elsewhere" in problems["moved"]
    assert all("--osworld-resume" in str(p) for p in store.problems)


def test_a_torn_last_trajectory_line_is_left_out(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.write_step("os/t1", step(1), None)
    with (tmp_path / "os" / "t1" / "traj.jsonl").open("a") as fh:
        fh.write('{"step_num": 2, "acti')
    assert [s["step_num"] for s in store.read_traj("os/t1")] == [1]


def test_valid_keys_are_the_ones_resume_keeps(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.write_result(record("os/pass", 1.0))
    store.write_result(record("os/fail", 0.0, Termination.MAX_STEPS))
    store.write_result(record("os/mask", None, Termination.SETUP_ERROR))
    store.write_result(record("os/skip", None, Termination.UNSUPPORTED))
    assert store.valid_keys() == {"os/pass", "os/fail"}


def test_begin_sets_an_earlier_attempt_aside(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    assert store.begin("os/t1") is None
    store.write_step("os/t1", step(1), PNG)
    store.write_result(record("os/t1", None, Termination.MODEL_ERROR))
    first = store.begin("os/t1")
    assert first == tmp_path / "_superseded" / "os" / "t1" / "1"
    assert (first / "traj.jsonl").is_file() and not store.path_of("os/t1").exists()
    store.write_result(record("os/t1", None, Termination.MODEL_ERROR))
    assert store.begin("os/t1") == tmp_path / "_superseded" / "os" / "t1" / "2"
    assert store.load_results() == {}


@pytest.mark.parametrize(
    "key", ["../x/y", "os/..", "os/../../etc", "_superseded/t1", "os/.hidden", "os", "os/a/b", "/t1"]
)
def test_keys_cannot_leave_the_run_folder(tmp_path: Path, key: str) -> None:
    with pytest.raises(StoreError, match="task key|bad task key"):
        RunStore(tmp_path).task_dir(key)


def test_task_key_round_trip() -> None:
    assert str(TaskKey.parse("os/abc")) == "os/abc"
    k = TaskKey.parse("os/abc#r3")
    assert (k.domain, k.task_id, k.repeat, k.folder) == ("os", "abc", 3, "abc#r3")
    assert record("os/abc#r3", 1.0).key == "os/abc#r3"
