"""Collection through pytest itself: one item per task, selectable by -k, -m and shards."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_osworld.cli import main as cli_main
from tests.support.paths import shared_examples
from tests.support.taskfactory import task, write_jsonl


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if "::" in line]


@pytest.fixture
def small_split() -> Path:
    return shared_examples() / "test_small.json"


def test_upstream_split_in_place(pytester: pytest.Pytester, small_split: Path) -> None:
    result = pytester.runpytest("--collect-only", "-q", str(small_split))
    items = collected(result)
    assert len(items) == 39
    # The part before "::" depends on where the split sits against the rootdir (next test); the task's
    # own part never does.
    files = {item.split("::", 1)[0] for item in items}
    assert len(files) == 1 and Path(files.pop()).name == "test_small.json", items
    assert "chrome/bb5e4c0d-f964-439c-97b6-bdb9747de3f4" in {item.split("::", 1)[1] for item in items}
    assert result.ret == 0


def test_an_input_outside_the_rootdir_is_named_from_the_folder_both_share(
    pytester: pytest.Pytester, small_split: Path
) -> None:
    # As docs/task-format.md says: OSWorld's checkout beside the project, pytest run in the project.
    data = pytester.path / "OSWorld" / "evaluation_examples"
    shutil.copytree(small_split.parent, data)
    project = pytester.mkdir("project")
    (project / "pytest.ini").write_text("[pytest]\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        result = pytester.runpytest("--collect-only", "-q", "../OSWorld/evaluation_examples/test_small.json")
    assert "OSWorld/evaluation_examples/test_small.json::chrome/bb5e4c0d-f964-439c-97b6-bdb9747de3f4" in collected(
        result
    ), result.stdout.str()
    selected = pytester.runpytest("--collect-only", "-q", str(data / "test_small.json"), "-k", "bb5e4c0d")
    assert [item.split("::", 1)[1] for item in collected(selected)] == ["chrome/bb5e4c0d-f964-439c-97b6-bdb9747de3f4"]


def test_imported_jsonl_collects_the_same(pytester: pytest.Pytester, small_split: Path) -> None:
    out = pytester.path / "small.jsonl"
    assert cli_main(["tasks", "import", str(small_split.parent), "--split", "test_small.json", "-o", str(out)]) == 0
    manifest = json.loads((pytester.path / "small.manifest.json").read_text())
    assert manifest["count"] == 39
    assert manifest["domains"]["multi_apps"] == 17
    direct = pytester.runpytest("--collect-only", "-q", str(small_split))
    imported = pytester.runpytest("--collect-only", "-q", "small.jsonl")
    strip: Callable[[list[str]], list[str]] = lambda items: sorted(i.split("::", 1)[1] for i in items)  # noqa: E731
    assert strip(collected(imported)) == strip(collected(direct))
    assert len(collected(imported)) == 39


@pytest.mark.docker
def test_import_and_in_place_share_the_input_digest(pytester: pytest.Pytester, small_split: Path) -> None:
    out = pytester.path / "small.jsonl"
    cli_main(["tasks", "import", str(small_split.parent), "--split", str(small_split), "-o", str(out)])
    imported_sha = json.loads((pytester.path / "small.manifest.json").read_text())["input_sha256"]
    pytester.makeconftest("def pytest_runtest_call(item):\n    pass\n")
    for source, run_id in ((str(small_split), "direct"), ("small.jsonl", "imported")):
        pytester.runpytest(source, "--osworld-run-id", run_id, "-k", "nothing-matches-this")
        run_manifest = json.loads((pytester.path / "reports" / run_id / "manifest.json").read_text())
        assert run_manifest["input"]["input_sha256"] == imported_sha


@pytest.mark.parametrize(
    ("args", "count"),
    [
        (["-k", "chrome"], 4),
        (["-k", "libreoffice_calc"], 3),
        (["-k", "bb5e4c0d"], 1),
        (["-k", "chrome and not proxy"], 1),
        (["-m", "not needs_gdrive"], 36),
        (["-m", "needs_gdrive"], 3),
        (["-m", "infeasible"], 0),
    ],
)
def test_selection(pytester: pytest.Pytester, small_split: Path, args: list[str], count: int) -> None:
    result = pytester.runpytest("--collect-only", "-q", str(small_split), *args)
    assert len(collected(result)) == count


def test_needs_network_matches_the_raw_json(pytester: pytest.Pytester, small_split: Path) -> None:
    expected = set()
    for file in (small_split.parent / "examples").glob("*/*.json"):
        raw = json.loads(file.read_text())
        steps = raw.get("config", []) + raw["evaluator"].get("postconfig", [])
        getters = [raw["evaluator"].get(k) for k in ("result", "expected")]
        flat = [g for x in getters for g in (x if isinstance(x, list) else [x]) if g]
        tabs = [u for s in steps if s["type"] == "chrome_open_tabs" for u in s["parameters"]["urls_to_open"]]
        pages = [
            g.get("url") or g.get("path", "")
            for g in flat
            if g["type"] in ("page_info", "info_from_website", "pdf_from_url")
        ]
        internet = any(u.startswith(("http://", "https://")) and "localhost" not in u for u in tabs + pages)
        if any(s["type"] == "download" for s in steps) or any(g["type"] == "cloud_file" for g in flat) or internet:
            expected.add(f"{file.parent.name}/{raw['id']}")
    result = pytester.runpytest("--collect-only", "-q", str(small_split), "-m", "needs_network")
    assert {i.split("::")[1] for i in collected(result)} == expected
    assert 0 < len(expected) < 39


def test_markers_per_task(pytester: pytest.Pytester) -> None:
    infeasible = task("inf", domain="chrome")
    infeasible["evaluator"] = {"func": "infeasible"}
    gdrive = task("gd", domain="multi_apps", config=[{"type": "googledrive", "parameters": {"settings_file": "x"}}])
    net = task("net", config=[{"type": "download", "parameters": {"files": [{"url": "http://x/a", "path": "/tmp/a"}]}}])
    web = task(
        "web",
        domain="chrome",
        config=[{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://www.example.org/"]}}],
    )
    local = task(
        "local",
        domain="chrome",
        config=[{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["http://localhost:8000/"]}}],
    )
    proxy = task("px", domain="chrome", proxy=True)
    page = task(
        "page",
        domain="chrome",
        evaluator={
            "func": "compare_pdfs",
            "result": {"type": "vm_file", "path": "/tmp/a.pdf", "dest": "a.pdf"},
            "expected": {"type": "pdf_from_url", "path": "https://example.org/post/", "dest": "gold.pdf"},
        },
    )
    local_page = task(
        "lpage",
        domain="chrome",
        evaluator={
            "func": "exact_match",
            "result": {"type": "page_info", "url": "http://127.0.0.1:9/"},
            "expected": {"type": "rule", "rules": {"expected": "x"}},
        },
    )
    write_jsonl(
        pytester.path / "t.jsonl", [infeasible, gdrive, net, proxy, task("plain"), web, local, page, local_page]
    )
    cases = {
        "infeasible": ["chrome/inf"],
        "needs_gdrive": ["multi_apps/gd"],
        "needs_network": ["os/net", "chrome/web", "chrome/page"],
        "needs_proxy": ["chrome/px"],
        "os": ["os/net", "os/plain"],
        "osworld": [
            "chrome/inf",
            "multi_apps/gd",
            "os/net",
            "chrome/px",
            "os/plain",
            "chrome/web",
            "chrome/local",
            "chrome/page",
            "chrome/lpage",
        ],
    }
    for marker, expected in cases.items():
        result = pytester.runpytest("--collect-only", "-q", "--strict-markers", "-m", marker, "t.jsonl")
        assert [i.split("::")[1] for i in collected(result)] == expected, marker


def test_related_apps_select_with_markers(pytester: pytest.Pytester) -> None:
    write_jsonl(
        pytester.path / "t.jsonl",
        [
            task("a", domain="chrome", related_apps=["chrome"]),
            task("b", domain="multi_apps", related_apps=["libreoffice_calc", "chrome"]),
            task("c", domain="multi_apps", related_apps=["os"]),
        ],
    )
    result = pytester.runpytest("--collect-only", "-q", "--strict-markers", "-m", "app(name='chrome')", "t.jsonl")
    assert [i.split("::")[1] for i in collected(result)] == ["chrome/a", "multi_apps/b"]
    result = pytester.runpytest("--collect-only", "-q", "-k", "chrome", "t.jsonl")
    assert [i.split("::")[1] for i in collected(result)] == ["chrome/a"]
    # Asked for, related apps are -k keywords too.
    result = pytester.runpytest("--collect-only", "-q", "--osworld-app-keywords", "-k", "libreoffice_calc", "t.jsonl")
    assert [i.split("::")[1] for i in collected(result)] == ["multi_apps/b"]
    result = pytester.runpytest("--collect-only", "-q", "--osworld-app-keywords", "-k", "chrome", "t.jsonl")
    assert [i.split("::")[1] for i in collected(result)] == ["chrome/a", "multi_apps/b"]


def test_a_new_domain_gets_a_registered_marker(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path / "t.jsonl", [task("a", domain="my_app"), task("b")])
    result = pytester.runpytest("--collect-only", "-q", "--strict-markers", "-m", "my_app", "t.jsonl")
    assert [i.split("::")[1] for i in collected(result)] == ["my_app/a"]
    assert pytester.runpytest("--markers").stdout.str().count("@pytest.mark.libreoffice_calc") == 1


def test_folder_collects_every_task_file_below(pytester: pytest.Pytester) -> None:
    (pytester.path / "tasks" / "more").mkdir(parents=True)
    write_jsonl(pytester.path / "tasks" / "a.jsonl", [task("a")])
    write_jsonl(pytester.path / "tasks" / "more" / "b.jsonl", [task("b")])
    # a run's output folder holds traj.jsonl files: not tasks
    (pytester.path / "tasks" / "more" / "traj.jsonl").write_text(json.dumps({"step_num": 1}) + "\n")
    result = pytester.runpytest("--collect-only", "-q", "tasks")
    assert sorted(i.split("::")[1] for i in collected(result)) == ["os/a", "os/b"]
    assert result.ret == 0


def test_duplicate_id_across_inputs(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path / "a.jsonl", [task("same")])
    write_jsonl(pytester.path / "b.jsonl", [task("other"), task("same", domain="chrome")])
    result = pytester.runpytest("--collect-only", "-q", "a.jsonl", "b.jsonl")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            f"*{pytester.path / 'b.jsonl'}:2: duplicate task id same: already collected from {pytester.path / 'a.jsonl'}:1*"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_collection_errors_have_no_traceback(pytester: pytest.Pytester) -> None:
    (pytester.path / "bad.jsonl").write_text('{"id": "x", "domain": "os"}\n')
    result = pytester.runpytest("--collect-only", "bad.jsonl")
    result.stdout.fnmatch_lines(
        [
            f"*{pytester.path / 'bad.jsonl'}:1 (task x): instruction: required field is missing*",
            f"*{pytester.path / 'bad.jsonl'}:1 (task x): evaluator: required field is missing*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert "pytest_osworld" not in result.stdout.str()


def test_repeat_makes_separate_items(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path / "t.jsonl", [task("a")])
    result = pytester.runpytest("--collect-only", "-q", "--osworld-repeat", "3", "t.jsonl")
    assert [i.split("::")[1] for i in collected(result)] == ["os/a[r1]", "os/a[r2]", "os/a[r3]"]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_shards_through_pytest_partition_the_selection(pytester: pytest.Pytester, count: int) -> None:
    write_jsonl(
        pytester.path / "t.jsonl", [task(f"t{i:02d}", domain=("os", "chrome", "vlc")[i % 3]) for i in range(23)]
    )
    selection = set(collected(pytester.runpytest("--collect-only", "-q", "-k", "not vlc", "t.jsonl")))
    shards = [
        set(
            collected(
                pytester.runpytest(
                    "--collect-only", "-q", "-k", "not vlc", "--osworld-shard", f"{i}/{count}", "t.jsonl"
                )
            )
        )
        for i in range(1, count + 1)
    ]
    assert set().union(*shards) == selection
    assert sum(len(s) for s in shards) == len(selection)


@pytest.mark.docker
def test_shard_manifest(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path / "t.jsonl", [task(f"t{i}") for i in range(6)])
    pytester.makeconftest("def pytest_runtest_call(item):\n    pass\n")
    pytester.runpytest("t.jsonl", "--osworld-shard", "2/3", "--osworld-run-id", "r1", "--co")
    assert not (pytester.path / "reports" / "r1").exists()  # listing tasks writes nothing
    pytester.runpytest("t.jsonl", "--osworld-shard", "2/3", "--osworld-run-id", "r1", "-k", "nothing")
    manifest = json.loads((pytester.path / "reports" / "r1" / "manifest.json").read_text())
    assert manifest["shard"] == "2/3"
    assert manifest["input"]["count"] == 6
    assert len(manifest["input"]["input_sha256"]) == 64
    assert manifest["selected"]["ids"] == []
