"""Task-hash pins of a V2 release, in both shapes; a mismatch names the file, both hashes and the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_osworld.v2.reading.pins import PinError, read_pins, sha256_file
from tests.support.v2data import ALL_IDS, E2B_HASHES, RELEASE_HASHES, TASK_CLASS

FILES = [f"task_{i}.py" for i in ALL_IDS]
REGENERATE = (
    "the test data's hash files must pin the test data's task files: after changing a task file, "
    "write its new SHA-256 into both files of tests/tasks/v2_data/hashes/"
)


def test_the_e2b_shape() -> None:
    pins = read_pins(E2B_HASHES)
    assert sorted(pins.hashes) == FILES
    assert pins.release is None  # that file does not name its release
    assert pins.revision == "0000000000000000000000000000000000000001"
    assert pins.file_sha256 == sha256_file(E2B_HASHES)


def test_the_release_shape_names_its_release_by_its_file_name() -> None:
    pins = read_pins(RELEASE_HASHES)
    assert sorted(pins.hashes) == FILES  # task_class/task_001.py pins task_001.py
    assert pins.release == "osworld-v2-test"


@pytest.mark.parametrize("hash_file", [E2B_HASHES, RELEASE_HASHES], ids=["e2b", "release"])
def test_the_test_data_matches_its_pins(hash_file: Path) -> None:
    pins = read_pins(hash_file)
    problems = [p for p in (pins.problem(TASK_CLASS / name) for name in FILES) if p]
    assert problems == [], REGENERATE


def test_a_changed_file_names_itself_both_hashes_and_the_fix(tmp_path: Path) -> None:
    changed = tmp_path / "task_003.py"
    shutil.copy(TASK_CLASS / "task_003.py", changed)
    with changed.open("a") as fh:
        fh.write("# edited\n")
    pins = read_pins(E2B_HASHES)
    problem = pins.problem(changed) or ""
    assert problem.startswith(f"{changed}: SHA-256 {sha256_file(changed)} differs from the pinned ")
    assert pins.hashes["task_003.py"] in problem
    assert str(E2B_HASHES) in problem
    assert "download the release's task files again" in problem


def test_a_file_the_pins_do_not_know_is_not_pinned(tmp_path: Path) -> None:
    extra = tmp_path / "task_999.py"
    extra.write_text("TASK_CLASS = None\n")
    problem = read_pins(RELEASE_HASHES).problem(extra) or ""
    assert problem.startswith(f"{extra}: not pinned: {RELEASE_HASHES} (release osworld-v2-test) has no hash")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"files": {"task_001.py": {"sha256": "abc"}}}', "files.task_001.py: expected a SHA-256"),
        ('{"task_001.py": 5}', "task_001.py: expected a SHA-256"),
        ('{"release": "x"}', "no task file hashes found"),
        ("[1]", "expected a JSON object"),
        ("{", "not a JSON hash file"),
        (
            json.dumps({"files": {"a/task_001.py": "a" * 64, "b/task_001.py": "b" * 64}}),
            "two different hashes for task_001.py",
        ),
    ],
)
def test_a_bad_hash_file_names_itself_and_the_key(tmp_path: Path, content: str, message: str) -> None:
    file = tmp_path / "pins.json"
    file.write_text(content)
    with pytest.raises(PinError) as info:
        read_pins(file)
    assert str(info.value).startswith(f"{file}: ")
    assert message in str(info.value)


def test_a_release_key_wins_over_the_file_name(tmp_path: Path) -> None:
    file = tmp_path / "other.task_hashes.json"
    file.write_text(json.dumps({"release": "osworld-v2.1", "task_001.py": "sha256:" + "A" * 64}))
    pins = read_pins(file)
    assert (pins.release, pins.hashes) == ("osworld-v2.1", {"task_001.py": "a" * 64})
