"""``--osworld-live`` through pytest: a bad address or a taken port stops the run before it starts; the
header names the page (and a missing noVNC, with the fix); the page lists every selected task with its
outcome, from a plain run and from xdist's workers.

The runs below select tasks whose metric this engine lacks: each is skipped before any sandbox could
start, so the page's own path (selection, start, outcome, figures) runs without a desktop (the engine
is asked only about the image). A conftest
asks the page for its state at the session's end, while it still serves.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.support.taskfactory import task, write_jsonl

ASK_THE_PAGE = """
import json, os
import httpx

def pytest_sessionfinish(session):
    if hasattr(session.config, "workerinput"):
        return
    url = "http://127.0.0.1:" + os.environ["LIVE_PORT"] + "/"
    state = httpx.get(url + "api/state", trust_env=False, timeout=10).json()
    page = httpx.get(url, trust_env=False, timeout=10).text
    with open("seen.json", "w") as out:
        json.dump({"state": state, "page": page}, out)
"""
UNKNOWN_METRIC = {
    "func": "no_such_metric",
    "result": {"type": "vm_command_line", "command": "true"},
    "expected": {"type": "rule", "rules": {"expected": "ok"}},
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tasks(folder: Path) -> Path:
    return write_jsonl(folder / "tasks.jsonl", [task(f"t{n}", evaluator=UNKNOWN_METRIC) for n in (1, 2, 3)])


def _seen(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str) -> dict[str, Any]:
    port = _free_port()
    monkeypatch.setenv("LIVE_PORT", str(port))
    pytester.makeconftest(ASK_THE_PAGE)
    source = _tasks(pytester.path)
    result = pytester.runpytest_subprocess(
        str(source), "-p", "no:cacheprovider", "--osworld-agent", "null", "--osworld-live", str(port), *args
    )
    result.stdout.fnmatch_lines([f"osworld: live page at http://127.0.0.1:{port}/"])
    assert result.ret == 0, result.stdout.str()
    seen: dict[str, Any] = json.loads((pytester.path / "seen.json").read_text())
    return seen


def _check(seen: dict[str, Any]) -> None:
    tasks = {t["key"]: t for t in seen["state"]["tasks"]}
    assert sorted(tasks) == ["os/t1", "os/t2", "os/t3"]
    for each in tasks.values():
        assert each["state"] == "skipped" and each["termination"] == "unsupported", each
        assert "no_such_metric" in each["message"]
    run = seen["state"]["run"]
    assert run["counts"] == {
        "total": 3,
        "queued": 0,
        "running": 0,
        "passed": 0,
        "failed": 0,
        "masked": 0,
        "skipped": 3,
        "kept": 0,
    }
    assert run["views"]["all"]["episodes"] == 0 and run["views"]["all"]["skipped"] == 3
    assert '<script src="/static/live.js"></script>' in seen["page"]


@pytest.mark.docker  # the run's manifest describes the sandbox's image, read from the engine (no sandbox starts)
def test_a_plain_run_lists_every_selected_task_with_its_outcome(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check(_seen(pytester, monkeypatch))


@pytest.mark.docker  # and xdist's controller checks the sandbox's image before its workers start
def test_under_xdist_the_workers_publish_to_the_controllers_page(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _seen(pytester, monkeypatch, "-n", "2")
    _check(seen)
    assert {t["worker"] for t in seen["state"]["tasks"]} <= {"gw0", "gw1", None}


def test_a_bad_address_stops_the_run_naming_the_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--osworld-live", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--osworld-live: expected [[]HOST:[]]PORT such as 8765 or 0.0.0.0:8765*"])


def test_a_taken_port_stops_the_run_naming_the_address(pytester: pytest.Pytester) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = pytester.runpytest("-p", "no:cacheprovider", "--osworld-live", str(port))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--osworld-live 127.0.0.1:{port}: cannot listen there*"])


def test_the_header_says_where_the_page_is_and_why_no_desktop_can_be_watched(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    empty = pytester.mkdir("empty")
    result = pytester.runpytest("-p", "no:cacheprovider", "--osworld-live", "0", "--osworld-live-novnc", str(empty))
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "osworld: live page at http://127.0.0.1:*/",
            f"osworld: live page: no watch view: --osworld-live-novnc {empty}: no noVNC there*",
        ]
    )
