"""What the engine declares it can run, per task and per input (`pytest-osworld tasks support`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.cli import main
from pytest_osworld.evaluation.getters import _registry as getter_registry
from pytest_osworld.runnable import format_report, needs_credentials, support_report, unsupported_reason
from pytest_osworld.sandbox.provides import REBUILD, unknown
from pytest_osworld.sandbox.registry import provider_class
from pytest_osworld.settings import Settings
from pytest_osworld.setup.assets import AssetCache
from pytest_osworld.tasks.model import Task
from pytest_osworld.tasks.readers import read_input
from tests.support.paths import shared_examples
from tests.support.taskfactory import task as make_task
from tests.support.taskfactory import write_jsonl

TARGET = 0.60


def task(**extra: Any) -> Task:
    return Task.model_validate(make_task("t1", **extra))


def test_a_plain_task_is_supported(tmp_path: Path) -> None:
    assert unsupported_reason(task(), Settings(asset_cache=tmp_path)) is None


def test_credentials_are_named() -> None:
    gdrive = task(
        config=[{"type": "googledrive", "parameters": {"settings_file": "s.yml", "operation": ["delete"]}}],
        evaluator={
            "func": "compare_pdfs",
            "result": {"type": "googledrive_file", "dest": "x"},
            "expected": {"type": "rule", "rules": {}},
        },
    )
    reason = needs_credentials(gdrive)
    assert reason and "step googledrive" in reason and "getter googledrive_file" in reason
    unsupported = unsupported_reason(gdrive, Settings())
    assert unsupported is not None and "Google credentials" in unsupported
    assert needs_credentials(task()) is None


def test_missing_getters_and_metrics_are_named_together() -> None:
    odd = task(
        evaluator={
            "func": ["no_such_metric_a", "exact_match"],
            "result": [{"type": "no_such_getter_b"}, {"type": "vm_command_line", "command": "true"}],
            "expected": [None, {"type": "rule", "rules": {"expected": ""}}],
        }
    )
    reason = unsupported_reason(odd, Settings())
    assert reason is not None
    assert "getters this engine lacks: no_such_getter_b" in reason
    assert "metrics this engine lacks: no_such_metric_a" in reason


def test_a_getter_missing_its_library_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(getter_registry._REQUIRES, "vm_command_line", (("not_a_real_module_xyz", "not-a-real-pkg"),))
    reason = unsupported_reason(task(), Settings())
    assert reason == "getter 'vm_command_line' needs pip install not-a-real-pkg"


def test_offline_needs_every_download_cached(tmp_path: Path) -> None:
    url = "https://files.example.invalid/setup.xlsx"
    downloading = task(config=[{"type": "download", "parameters": {"files": [{"url": url, "path": "~/s.xlsx"}]}}])
    online, offline = Settings(asset_cache=tmp_path), Settings(asset_cache=tmp_path, offline=True)
    assert unsupported_reason(downloading, online) is None
    reason = unsupported_reason(downloading, offline)
    assert reason is not None and url in reason and "assets prefetch" in reason
    AssetCache(tmp_path).put_bytes(url, b"x")
    assert unsupported_reason(downloading, offline) is None


@pytest.mark.docker
def test_report_on_a_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = write_jsonl(
        tmp_path / "t.jsonl",
        [
            make_task("a", domain="os"),
            make_task("b", domain="os", evaluator={"func": "no_such_metric_c", "result": {"type": "rule", "rules": 1}}),
            make_task(
                "c",
                domain="chrome",
                config=[
                    {
                        "type": "download",
                        "parameters": {"files": [{"url": "https://files.example.invalid/f", "path": "~/f"}]},
                    }
                ],
            ),
        ],
    )
    assert main(["tasks", "support", str(tasks), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["total"] == 3 and report["supported"] == 2
    # Plain tasks need nothing the desktop image lacks: runnable is what the engine supports.
    assert report["domains"] == {
        "chrome": {"tasks": 1, "supported": 1, "runnable": 1},
        "os": {"tasks": 2, "supported": 1, "runnable": 1},
    }
    assert report["missing"] == {"metric no_such_metric_c": 1}
    assert report["asset_cache"]["tasks_with_downloads"] == 1
    assert "os/b" in report["unsupported"]


@pytest.mark.docker
def test_test_small_meets_the_support_target(capsys: pytest.CaptureFixture[str]) -> None:
    split = shared_examples() / "test_small.json"
    assert main(["tasks", "support", str(split)]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == ["domain", "tasks", "supported", "runnable", "on", "desktop"]
    total = next(line for line in table.splitlines() if line.startswith("total"))
    tasks, supported = (int(v) for v in total.split()[1:3])
    assert tasks == 39
    assert supported / tasks >= TARGET, table
    assert "credentials (3)" in table  # the Google Drive tasks, and only those, are declared out
    assert main(["tasks", "support", str(split), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fraction"] >= TARGET and report["supported"] == supported


def test_a_step_missing_its_library_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_osworld.setup import steps as setup

    monkeypatch.setitem(setup.STEP_REQUIREMENTS, "chrome_open_tabs", (("not_a_real_module_xyz", "not-a-real-pkg"),))
    tabs = task(config=[{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["http://x/"]}}])
    assert unsupported_reason(tabs, Settings()) == "step 'chrome_open_tabs' needs pip install not-a-real-pkg"


# --- runnable on a sandbox: what the engine supports and the sandbox provides -----------------


def _small_report(capsys: pytest.CaptureFixture[str], sandbox: str) -> tuple[list[str], dict[str, Any]]:
    split = shared_examples() / "test_small.json"
    assert main(["tasks", "support", str(split), "--sandbox", sandbox]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert main(["tasks", "support", str(split), "--sandbox", sandbox, "--json"]) == 0
    return lines, json.loads(capsys.readouterr().out)


def test_on_osworld_vm_everything_the_engine_supports_is_runnable(capsys: pytest.CaptureFixture[str]) -> None:
    lines, report = _small_report(capsys, "osworld-vm")
    assert lines[0].split()[-3:] == ["runnable", "on", "osworld-vm"]
    assert report["runnable"] == report["supported"] == 36
    assert lines[-1] == "runnable on osworld-vm: 36 of 39"
    assert report["sandbox"]["known"] and report["sandbox"]["source"] == "declared manifest osworld-ubuntu.json"
    assert report["sandbox_lacks"] == {}
    assert all(row["runnable"] == row["supported"] for row in report["domains"].values())
    # Only the engine keeps the Google Drive tasks out, and each says so.
    out = {key: row for key, row in report["tasks"].items() if not row["runnable"]}
    assert len(out) == 3 and all(row["engine"] == ["credentials"] and row["lacks"] == {} for row in out.values())


@pytest.mark.docker
def test_on_the_desktop_image_every_app_domain_runs(desktop_ref: str, capsys: pytest.CaptureFixture[str]) -> None:
    lines, report = _small_report(capsys, "desktop")
    sandbox = report["sandbox"]
    assert sandbox["known"], sandbox["problem"]
    assert desktop_ref in sandbox["source"]  # read off the current image's manifest label
    assert {
        "chrome",
        "libreoffice_calc",
        "libreoffice_writer",
        "libreoffice_impress",
        "terminal",
        "gimp",
        "vlc",
        "thunderbird",
        "vs_code",
    } <= set(sandbox["apps"])
    assert sandbox["commands"] > 300  # every executable on PATH
    assert report["domains"]["chrome"] == {"tasks": 4, "supported": 4, "runnable": 4}
    assert report["domains"]["gimp"] == {"tasks": 2, "supported": 2, "runnable": 2}
    runnable = sum(row["runnable"] is True for row in report["tasks"].values())
    assert report["runnable"] == runnable == sum(row["runnable"] for row in report["domains"].values())
    # The image lacks nothing test_small needs (nautilus included): only the engine keeps the Google
    # Drive tasks out. What a sandbox lacks, by cause, is tested in tests/plugin/test_skips.py.
    assert report["sandbox_lacks"] == {}
    assert runnable == report["supported"] == 36
    assert lines[-1] == "runnable on desktop: 36 of 39"


@pytest.mark.docker
def test_the_vm_sandbox_provides_what_the_desktop_image_does(desktop_ref: str) -> None:
    vm = provider_class("vm", Settings(sandbox="vm")).provides(Settings(sandbox="vm"))
    desktop = provider_class("desktop", Settings()).provides(Settings())
    assert vm.known and (vm.apps, vm.commands) == (desktop.apps, desktop.commands)
    assert vm.sandbox == "vm" and "the VM boots its filesystem" in vm.source


def test_an_unknown_sandbox_is_said_so_not_guessed() -> None:
    entries = read_input(shared_examples() / "test_small.json")
    lost = unknown("desktop", "image d:1", f"the desktop image is not built here; {REBUILD} (or pass --build-image)")
    report = support_report(entries, Settings(), provides=lost)
    assert report["runnable"] is None and all(r["runnable"] is None for r in report["domains"].values())
    assert all(row["runnable"] is None for row in report["tasks"].values())
    text = format_report(report).splitlines()
    assert text[-1] == (
        "runnable on desktop: unknown, of 39 (the desktop image is not built here; rebuild the image: "
        "pytest-osworld image build (or pass --build-image))"
    )
    assert text[1].split()[-1] == "?"


def test_an_unknown_sandbox_name_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = write_jsonl(tmp_path / "t.jsonl", [make_task("a")])
    assert main(["tasks", "support", str(tasks), "--sandbox", "nowhere"]) == 2
    assert "sandbox profile 'nowhere' is not defined" in capsys.readouterr().err
