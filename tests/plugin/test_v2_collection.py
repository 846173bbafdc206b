"""OSWorld-V2 inputs through pytest: every input form, markers and -m/-k, errors, pins, the manifest,
and the skip of V2 items no runner can play (before any service or sandbox)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_osworld.plugin.items import names_task_inputs
from pytest_osworld.plugin.v2 import NO_RUNNER
from pytest_osworld.v2.reading.pins import sha256_file
from tests.support.v2data import ALL_IDS, copy_v2_data

NOT_CACHED = ("-p", "no:cacheprovider")


@pytest.fixture
def data(pytester: pytest.Pytester) -> Path:
    return copy_v2_data(pytester.path)


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if "::" in line]


def collect(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--collect-only", "-q", "--strict-markers", *NOT_CACHED, *args)


def test_a_v2_split(pytester: pytest.Pytester, data: Path) -> None:
    result = collect(pytester, "evaluation_examples/test_v2.json")
    assert collected(result) == [f"evaluation_examples/test_v2.json::v2/{i}" for i in ALL_IDS]
    assert result.ret == 0


def test_a_capability_split_given_by_name(pytester: pytest.Pytester, data: Path) -> None:
    result = collect(pytester, "evaluation_examples/tutorial_following.json")
    assert collected(result) == [
        "evaluation_examples/tutorial_following.json::v2/001",
        "evaluation_examples/tutorial_following.json::v2/004",
    ]


def test_a_task_class_folder(pytester: pytest.Pytester, data: Path) -> None:
    result = collect(pytester, "evaluation_examples/task_class")
    # generated_task_utils.py beside the tasks is not one.
    assert collected(result) == [f"evaluation_examples/task_class/task_{i}.py::v2/{i}" for i in ALL_IDS]


def test_a_single_task_file(pytester: pytest.Pytester, data: Path) -> None:
    result = collect(pytester, "evaluation_examples/task_class/task_006.py")
    assert collected(result) == ["evaluation_examples/task_class/task_006.py::v2/006"]


def test_walking_a_folder_collects_the_split_once(pytester: pytest.Pytester, data: Path) -> None:
    # Not the task files the split already names, not the capability splits, not task_notes.py.
    result = collect(pytester, "evaluation_examples")
    assert collected(result) == [f"evaluation_examples/test_v2.json::v2/{i}" for i in ALL_IDS]


def test_a_v2_split_beside_v1_examples_stays_v2(pytester: pytest.Pytester, data: Path) -> None:
    # Upstream's evaluation_examples holds v1's examples/ and test_all.json beside V2's files.
    (data / "evaluation_examples" / "examples" / "os").mkdir(parents=True)
    for target in ("evaluation_examples/test_v2.json", "evaluation_examples"):
        result = collect(pytester, target)
        assert collected(result) == [f"evaluation_examples/test_v2.json::v2/{i}" for i in ALL_IDS], target
    # Nor does a V2 split ask for an agent or a sandbox before the session (as v1 inputs do under xdist).
    assert not names_task_inputs([data / "evaluation_examples" / "test_v2.json", data / "evaluation_examples"])


def test_a_task_file_is_never_imported(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "task_class"
    folder.mkdir()
    (folder / "task_010.py").write_text(
        "import os\nos.environ['WEBSITE_HOST_SUFFIX']  # upstream's website controller raises like this\n"
        "raise RuntimeError('TASK MODULE RAN')\n"
        "from desktop_env.task_base import BaseTask\n"
        "class Task010(BaseTask):\n    instruction = 'collected without running'\n"
        "TASK_CLASS = Task010\n"
    )
    for target in ("task_class/task_010.py", "task_class", "."):
        result = collect(pytester, target)
        assert collected(result) == ["task_class/task_010.py::v2/010"], target
        assert "TASK MODULE RAN" not in result.stdout.str() + result.stderr.str()


def test_other_python_files_stay_pytest_s(pytester: pytest.Pytester, data: Path) -> None:
    pytester.makepyfile(test_plain="def test_it():\n    pass\n")
    result = pytester.runpytest("test_plain.py", *NOT_CACHED)
    result.assert_outcomes(passed=1)
    notes = collect(pytester, "evaluation_examples/task_notes.py")
    assert "no task in the file" in notes.stdout.str()  # given by name as task_*.py: read, and refused


@pytest.mark.parametrize(
    ("args", "ids"),
    [
        (["-m", "v2 and llm_judge"], ["003"]),
        (["-m", "service(name='website')"], ["002"]),
        (["-m", "service(name='gitlab')"], ["006"]),
        (["-m", "service(name='proxy')"], ["004"]),
        (["-m", "needs_services"], ["002", "004", "006"]),
        (["-m", "user_sim"], ["004"]),
        (["-m", "multi_phase"], ["005"]),
        (["-m", "capability(name='tutorial_following')"], ["001", "004"]),
        (["-m", "capability(name='human_in_the_loop') and needs_proxy"], ["004"]),
        (["-m", "app(name='libreoffice_writer')"], ["001"]),
        (["-m", "v2 and not needs_services and not llm_judge"], ["001", "005", "007", "008"]),
        (["-k", "008"], ["008"]),
    ],
)
def test_selection(pytester: pytest.Pytester, data: Path, args: list[str], ids: list[str]) -> None:
    result = collect(pytester, "evaluation_examples/test_v2.json", *args)
    assert [line.rpartition("/")[2] for line in collected(result)] == ids
    assert result.ret == 0


def test_repeats_and_shards_count_v2_items(pytester: pytest.Pytester, data: Path) -> None:
    repeated = collected(collect(pytester, "evaluation_examples/test_v2.json", "--osworld-repeat", "2"))
    assert len(repeated) == 16 and repeated[:2] == [
        "evaluation_examples/test_v2.json::v2/001[r1]",
        "evaluation_examples/test_v2.json::v2/001[r2]",
    ]
    shards = [
        collected(collect(pytester, "evaluation_examples/test_v2.json", "--osworld-shard", f"{i}/3")) for i in (1, 2, 3)
    ]
    assert sorted(line for shard in shards for line in shard) == [
        f"evaluation_examples/test_v2.json::v2/{i}" for i in ALL_IDS
    ]


def test_an_unparsable_file_is_a_collection_error_naming_file_and_line(pytester: pytest.Pytester, data: Path) -> None:
    result = collect(pytester, "broken/task_900.py", "evaluation_examples/task_class/task_001.py")
    output = result.stdout.str()
    assert f"{pytester.path / 'broken' / 'task_900.py'}:8: not valid Python: unterminated string literal" in output
    assert "Traceback" not in output
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_split_and_its_own_task_file_are_duplicates(pytester: pytest.Pytester, data: Path) -> None:
    result = collect(pytester, "evaluation_examples/test_v2.json", "evaluation_examples/task_class/task_001.py")
    assert "duplicate task id 001" in result.stdout.str()


@pytest.mark.parametrize("hashes", ["task-hashes.json", "osworld-v2-test.task_hashes.json"])
def test_pinned_files_collect(pytester: pytest.Pytester, data: Path, hashes: str) -> None:
    result = collect(pytester, "evaluation_examples/test_v2.json", "--osworld-v2-hashes", f"hashes/{hashes}")
    assert len(collected(result)) == 8


def test_a_file_that_differs_from_its_pin_is_an_error(pytester: pytest.Pytester, data: Path) -> None:
    changed = data / "evaluation_examples" / "task_class" / "task_003.py"
    with changed.open("a") as fh:
        fh.write("# edited after the release\n")
    result = pytester.runpytest(
        "evaluation_examples/test_v2.json", "--osworld-v2-hashes", "hashes/task-hashes.json", *NOT_CACHED
    )
    output = result.stdout.str()
    assert f"{changed}: SHA-256 {sha256_file(changed)} differs from the pinned " in output
    assert "download the release's task files again" in output
    assert "Traceback" not in output
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert not (pytester.path / "reports").exists() or not list((pytester.path / "reports").rglob("manifest.json"))


def test_an_unreadable_hash_file_is_a_usage_error(pytester: pytest.Pytester, data: Path) -> None:
    result = collect(pytester, "evaluation_examples/test_v2.json", "--osworld-v2-hashes", "missing.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "missing.json: cannot read the hash file" in result.stderr.str()


@pytest.mark.docker
def test_v2_items_are_skipped_with_the_reason_and_the_manifest_keeps_the_pins(
    pytester: pytest.Pytester, data: Path
) -> None:
    result = pytester.runpytest(
        "evaluation_examples/test_v2.json",
        "--osworld-v2-hashes",
        "hashes/osworld-v2-test.task_hashes.json",
        "--osworld-run-id",
        "r1",
        "-m",
        "not multi_phase",
        "-rs",
        *NOT_CACHED,
    )
    result.assert_outcomes(skipped=7, deselected=1)
    result.stdout.fnmatch_lines([f"SKIPPED*task_001.py: {NO_RUNNER}"])
    v2 = json.loads((pytester.path / "reports" / "r1" / "manifest.json").read_text())["v2"]
    assert v2["release"] == "osworld-v2-test"
    assert v2["hash_file"] == str(pytester.path / "hashes" / "osworld-v2-test.task_hashes.json")
    assert v2["count"] == 8
    assert v2["selected"] == [f"v2/{i}" for i in ALL_IDS if i != "005"]
    task_001 = data / "evaluation_examples" / "task_class" / "task_001.py"
    assert v2["hashes"]["task_001.py"] == sha256_file(task_001)
    assert len(v2["hashes"]) == 8
