"""The run manifest: one typed model, written whole by its one owner at its two moments (start, end)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_osworld.results.manifest import ManifestOwner, ModelIdentity, RunManifest, read_manifest
from pytest_osworld.results.store import StoreError
from pytest_osworld.tasks.readers import TaskEntry, read_input
from tests.results.helpers import BASE_ARGS, make_project
from tests.support.taskfactory import task, write_jsonl


def _entries(tmp_path: Path, count: int = 3) -> tuple[list[TaskEntry], Path]:
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [task(f"t{i}") for i in range(count)])
    return read_input(path), path


def test_start_writes_the_selection_and_end_completes_it(tmp_path: Path) -> None:
    entries, source = _entries(tmp_path)
    owner = ManifestOwner(tmp_path / "run", "run")
    started = owner.start(
        entries=entries, sources=[source], selected={"os/t0", "os/t1"}, needs_gdrive={"os/t1"}, shard="1/2", repeat=1
    )
    on_disk = read_manifest(tmp_path / "run")
    assert on_disk == started
    assert on_disk is not None and on_disk.finished is None  # under way until the end says otherwise
    assert on_disk.selected.ids == ["os/t0", "os/t1"] and on_disk.selected.needs_gdrive == ["os/t1"]
    assert on_disk.input.count == 3 and on_disk.input.sources == [str(source)]
    assert on_disk.shard == "1/2" and on_disk.versions.python

    ended = owner.end(sandbox={"profile": "desktop"}, runner="oracle", model=ModelIdentity(api="openai", name="m"))
    assert ended is not None and ended.finished is not None
    again = read_manifest(tmp_path / "run")
    assert again is not None
    assert (again.sandbox, again.runner, again.model) == ({"profile": "desktop"}, "oracle", ended.model)
    assert again.selected == started.selected  # the end changes only what it owns


def test_a_resumed_start_keeps_the_earlier_selection_and_sandboxes(tmp_path: Path) -> None:
    entries, source = _entries(tmp_path)
    owner = ManifestOwner(tmp_path / "run", "run")
    owner.start(
        entries=entries, sources=[source], selected={"os/t0", "os/t1"}, needs_gdrive=set(), shard=None, repeat=1
    )
    earlier = owner.end(sandbox={"profile": "desktop"}, runner="null", model=None)
    assert earlier is not None
    resumed = owner.start(
        entries=entries,
        sources=[source],
        selected={"os/t1"},
        needs_gdrive=set(),
        shard=None,
        repeat=1,
        earlier=earlier,
        resumed=["os/t0"],
    )
    assert resumed.selected.ids == ["os/t0", "os/t1"]
    assert resumed.resume is not None and resumed.resume.resumed == ["os/t0"]
    assert resumed.resume.from_created == earlier.created
    assert resumed.sandbox == {"profile": "desktop"} and resumed.finished is None


def test_end_without_a_start_writes_nothing(tmp_path: Path) -> None:
    assert ManifestOwner(tmp_path / "run", "run").end(sandbox={}, runner=None, model=None) is None
    assert not (tmp_path / "run").exists()


def test_keys_of_a_later_version_survive_a_round_trip(tmp_path: Path) -> None:
    manifest = RunManifest(run_id="r")
    data = {**manifest.model_dump(mode="json"), "future_key": {"kept": True}}
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    read = read_manifest(tmp_path)
    assert read is not None
    read.write(tmp_path)
    assert json.loads((tmp_path / "manifest.json").read_text())["future_key"] == {"kept": True}


def test_a_corrupt_manifest_is_an_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"run_id": ')
    with pytest.raises(StoreError, match=str(tmp_path / "manifest.json")):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"kind": "something else", "run_id": "r"}')
    with pytest.raises(StoreError, match="not a readable manifest"):
        read_manifest(tmp_path)


def test_a_write_replaces_the_file_whole(tmp_path: Path) -> None:
    RunManifest(run_id="r").write(tmp_path)
    first = os.stat(tmp_path / "manifest.json").st_ino
    RunManifest(run_id="r", runner="x").write(tmp_path)
    # A new file renamed over the old one: a reader sees the old manifest or the new one, never half.
    assert os.stat(tmp_path / "manifest.json").st_ino != first
    assert list(tmp_path.iterdir()) == [tmp_path / "manifest.json"]


@pytest.mark.docker
def test_a_session_writes_the_manifest_at_its_start_and_its_end(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    result = pytester.runpytest("tasks.jsonl", *BASE_ARGS, "--osworld-run-id", "r1", "-m", "os")
    assert result.ret == 1
    manifest = read_manifest(pytester.path / "reports" / "r1")
    assert manifest is not None
    assert manifest.selected.ids == ["os/fail-1", "os/pass-1"]
    assert manifest.runner == "null" and manifest.finished is not None
    assert manifest.sandbox is not None  # the end's sandbox identity (here: why it could not be read)
