"""Offline, a task that needs live web sites is not runnable: the support report says so, with the cause,
and an offline run skips it before any sandbox starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_osworld.cli import main
from pytest_osworld.runnable import unsupported_reason
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.readers import TaskEntry, read_split
from tests.support.paths import shared_examples

COOKIE_TASK = "7b6c7e24-c58a-49fc-a5bb-d57b80e5b4c3"  # chrome: delete Amazon's cookies
COOKIE_KEY = f"chrome/{COOKIE_TASK}"
LIVE_IN_TEST_SMALL = 8


@pytest.fixture(scope="module")
def cookie_task() -> TaskEntry:
    return next(e for e in read_split(shared_examples() / "test_small.json") if e.id == COOKIE_TASK)


def test_offline_a_task_needing_live_sites_is_unsupported_naming_them(cookie_task: TaskEntry, tmp_path: Path) -> None:
    assert unsupported_reason(cookie_task.task, Settings(asset_cache=tmp_path)) is None  # online: it runs
    reason = unsupported_reason(cookie_task.task, Settings(asset_cache=tmp_path, offline=True))
    assert reason == (
        "offline, and the task needs live web sites the guest cannot load here (config[2] (chrome_open_tabs) opens "
        "https://www.amazon.com, https://www.amazon.com/s?k=huggingface+transformers+book); run it with internet "
        "access, or select it away with -m 'not needs_network'"
    )


@pytest.mark.docker
def test_support_offline_counts_them_as_not_runnable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    split = str(shared_examples() / "test_small.json")
    cache = ["--asset-cache", str(tmp_path / "assets")]
    assert main(["tasks", "support", split, *cache, "--json"]) == 0
    online = json.loads(capsys.readouterr().out)
    assert main(["tasks", "support", split, *cache, "--offline", "--json"]) == 0
    offline = json.loads(capsys.readouterr().out)
    assert online["live_web"] == offline["live_web"] == {"tasks": LIVE_IN_TEST_SMALL}
    assert COOKIE_KEY not in online["unsupported"]
    assert "https://www.amazon.com" in offline["unsupported"][COOKIE_KEY]
    assert offline["missing"]["live web sites (offline)"] == LIVE_IN_TEST_SMALL
    assert "live web sites (offline)" not in online["missing"]
    assert main(["tasks", "support", split, *cache, "--offline"]) == 0
    table = capsys.readouterr().out
    assert f"  live web sites (offline) ({LIVE_IN_TEST_SMALL})" in table
    assert (
        f"{LIVE_IN_TEST_SMALL} task(s) need live web sites (offline: counted as not runnable, and skipped by an "
        "offline run); select them away with -m 'not needs_network'"
    ) in table
    chrome = table.splitlines()[1].split()
    # Only the search-engine task needs no site (nor any download); the desktop image has Chrome.
    assert chrome[:3] == ["chrome", "4", "1"]


@pytest.mark.docker
def test_an_offline_run_skips_them_before_any_sandbox(pytester: pytest.Pytester, tmp_path: Path) -> None:
    split = shared_examples() / "test_small.json"
    pytester.makeini("[pytest]\n")  # the rootdir is pytester's folder, not the shared examples
    pytester.makeconftest(
        "import pytest\n\ndef pytest_runtest_call(item):\n    pytest.fail('a task ran: it should have been skipped')\n"
    )
    result = pytester.runpytest(
        str(split),
        "-k",
        COOKIE_TASK[:8],
        "--osworld-agent",
        "null",
        "--osworld-offline",
        "--osworld-asset-cache",
        str(tmp_path / "assets"),
        "-p",
        "no:cacheprovider",
        "-rs",
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*unsupported here: offline, and the task needs live web sites*amazon.com*"])
