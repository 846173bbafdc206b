"""A task item's Allure page reads like the task, on result files that real pytest runs write.

The description is the instruction, the parameters are the episode's facts, repeats share a history
id, masks are broken with their reason, the task's setup steps are set-up entries with their timing,
and the plugin's own fixtures fold into one entry. pytest-html shows the same facts.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.results.allure_report import FIXTURES_ENTRY, POSTCONFIG_STEP, SETUP_ENTRY
from pytest_osworld.results.task_page import PARAMETER_NAMES
from tests.results.helpers import BASE_ARGS, EPISODE_CONFTEST, make_project

pytestmark = pytest.mark.docker

SECRET = "qq-page-secret-value-9"
# A user's own autouse fixture: not the plugin's, so it stays on the task's page as allure-pytest made it.
USER_FIXTURE = """

@pytest.fixture(autouse=True)
def users_own_fixture():
    yield
"""


def results(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*-result.json"))]


def by_name(found: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in found}


def containers(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*-container.json"))]


def parameters(result: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in result.get("parameters", [])}


def set_up_of(folder: Path, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The set-up entries Allure shows for a result: the befores of every container naming it."""
    return [b for c in containers(folder) if result["uuid"] in c.get("children", []) for b in c.get("befores", [])]


def tear_down_of(folder: Path, result: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for c in containers(folder) if result["uuid"] in c.get("children", []) for a in c.get("afters", [])]


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("OSWORLD_TEST_FLIP", raising=False)
    monkeypatch.setenv("OSWORLD_TEST_SECRET", SECRET)
    make_project(pytester)
    (pytester.path / "conftest.py").write_text(EPISODE_CONFTEST + USER_FIXTURE)
    return pytester


def test_pages_under_xdist_with_repeats(project: pytest.Pytester) -> None:
    alluredir = project.path / "allure-results"
    run = project.runpytest_subprocess(
        "tasks.jsonl",
        *BASE_ARGS,
        "-n",
        "2",
        "--osworld-repeat",
        "2",
        "--osworld-run-id",
        "r1",
        "--osworld-model",
        "some-model-7b",
        f"--alluredir={alluredir}",
    )
    assert run.parseoutcomes() == {"passed": 2, "failed": 2, "skipped": 2, "masked": 4}
    found = results(alluredir)
    pages = by_name(found)
    assert len(found) == len(pages) == 10  # each repeat its own result file
    assert len({r["uuid"] for r in found}) == 10

    # The description: the instruction, then the task and where it is defined.
    passed = pages["os/pass-1[r1]"]
    assert passed["description"].startswith("do pass-1\n")
    assert "Task `os/pass-1`, from `" in passed["description"] and "tasks.jsonl:1`" in passed["description"]
    assert passed["descriptionHtml"].startswith("<p>do pass-1</p>")
    assert "os/pass-1#r2" in pages["os/pass-1[r2]"]["description"]
    assert all(r["description"].startswith(f"do {r['name'].split('/')[1].split('[')[0]}\n") for r in found)

    # The parameters: the episode's facts as text, none of them part of the history id.
    for result in found:
        assert [p["name"] for p in result["parameters"]] == list(PARAMETER_NAMES), result["name"]
        assert all(p["excluded"] is True for p in result["parameters"])
    assert parameters(passed) == {
        "score": "1",
        "termination": "done",
        "steps": "2",
        "runner": "null",
        "model": "some-model-7b",
        "repeat": "1",
    }
    assert parameters(pages["os/pass-1[r2]"])["repeat"] == "2"
    assert parameters(pages["os/fail-1[r1]"])["score"] == "0.5"
    assert parameters(pages["chrome/mask-1[r1]"])["score"] == "-"
    assert parameters(pages["chrome/sbx-1[r2]"]) | {"model": "x"} == {
        "score": "-",
        "termination": "sandbox_error",
        "steps": "0",
        "runner": "null",
        "model": "x",
        "repeat": "2",
    }

    # Repeats are one test in Allure's eyes (retries), tasks are not.
    for task in ("os/pass-1", "os/fail-1", "chrome/mask-1", "chrome/sbx-1", "chrome/skip-1"):
        first, second = pages[f"{task}[r1]"], pages[f"{task}[r2]"]
        assert first["historyId"] == second["historyId"] and first["testCaseId"] == second["testCaseId"], task
    assert len({r["historyId"] for r in found}) == 5

    # Statuses and their messages.
    statuses = {name: (r["status"], r.get("statusDetails", {}).get("message")) for name, r in pages.items()}
    assert statuses["os/pass-1[r1]"] == ("passed", None)
    assert statuses["os/fail-1[r1]"] == ("failed", "score 0.5: the agent said DONE")
    assert statuses["chrome/mask-1[r1]"] == ("broken", "masked (model_error): endpoint down (api_key=***)")
    status, message = statuses["chrome/sbx-1[r2]"]
    assert status == "broken" and message.startswith("masked (sandbox_error): could not start the desktop")
    assert statuses["chrome/skip-1[r1]"] == ("skipped", "needs Google Drive credentials")

    # Links: the run's summary, where the controller wrote it.
    summary_link = {link["name"]: link["url"] for link in passed["links"]}["summary.json"]
    assert summary_link == (project.path / "reports" / "r1" / "summary.json").resolve().as_uri()
    assert (project.path / "reports" / "r1" / "summary.json").is_file()

    # Set up: the plugin's fixtures as one entry (the failed sandbox broken in it), the user's own as it is.
    for result in found:
        entries = set_up_of(alluredir, result)
        names = [b["name"] for b in entries]
        assert names.count(FIXTURES_ENTRY) == 1 and "users_own_fixture" in names, (result["name"], names)
        assert not [n for n in names if n.startswith("osworld_") or n == "pytestconfig"], names
        assert not [a["name"] for a in tear_down_of(alluredir, result) if "<lambda>" in a["name"]]
    folded = next(b for b in set_up_of(alluredir, passed) if b["name"] == FIXTURES_ENTRY)
    assert {s["name"] for s in folded["steps"]} == {
        "osworld_task_services",
        "osworld_entry",
        "osworld_sandbox",
        "osworld_recorder",
        "osworld_episode",
    }
    assert folded["status"] == "passed" and all(s["start"] <= s["stop"] for s in folded["steps"])
    broken = next(b for b in set_up_of(alluredir, pages["chrome/sbx-1[r1]"]) if b["name"] == FIXTURES_ENTRY)
    assert broken["status"] == "broken" and "could not start the desktop" in broken["statusDetails"]["message"]

    for path in alluredir.iterdir():
        assert SECRET not in path.read_text(errors="replace"), path.name


# An episode that records its task's setup as the real one does: each config step with its seconds,
# the setup phase around them, postconfig opening the evaluation, a video when the run keeps one.
SETUP_CONFTEST = r"""
from datetime import UTC, datetime, timedelta

import pytest

from pytest_osworld.plugin.outcomes import end_test
from pytest_osworld.record import Durations, TaskResult, Termination
from pytest_osworld.setup.context import StepRecord

STARTED = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def osworld_sandbox():
    return object()


class Episode:
    def __init__(self, recorder, entry, run, repeat):
        self.recorder, self.entry, self.run, self.repeat = recorder, entry, run, repeat

    def run_and_judge(self):
        task = self.entry.task
        fail_at = self.entry.raw.get("x_fail_step")
        steps = []
        for index, step in enumerate(task.config):
            ok = index != fail_at
            note = "exit 0" if ok else "exit 1: no such file (token=hunter2-secret-token)"
            steps.append(StepRecord("config", index, step.type, 0.25, ok, note).to_json())
            if not ok:
                break
        if fail_at is None:
            for index, step in enumerate(task.evaluator.postconfig):
                steps.append(StepRecord("postconfig", index, step.type, 0.5, True, "").to_json())
        video = self.recorder.video(b"\x00\x00\x00\x18ftypmp42")
        result = TaskResult(
            run_id=self.run.run_id, task_id=self.entry.id, domain=self.entry.domain, repeat=self.repeat,
            termination=Termination.SETUP_ERROR if fail_at is not None else Termination.DONE,
            score=None if fail_at is not None else 1.0,
            message="setup step failed" if fail_at is not None else "the agent said DONE",
            steps=0 if fail_at is not None else 1,
            runner="null",
            durations=Durations(setup=2.0, evaluation=3.0, total=10.0),
            started_at=STARTED.isoformat(timespec="milliseconds"),
            finished_at=(STARTED + timedelta(seconds=10)).isoformat(timespec="milliseconds"),
            setup_steps=steps,
            artifacts={"recording": video} if video else {},
        )
        self.recorder.finish(result)
        end_test(result)
        return result


@pytest.fixture
def osworld_episode(request, osworld_sandbox, osworld_recorder, osworld_entry, osworld_run):
    return Episode(osworld_recorder, osworld_entry, osworld_run, request.node.repeat)
"""

SETUP_TASKS = [
    {
        "id": "setup-1",
        "domain": "os",
        "instruction": "Rename *report_v1* to report_final",
        "config": [
            {"type": "execute", "parameters": {"command": "mkdir -p ~/Desktop", "shell": True}},
            {"type": "launch", "parameters": {"command": ["gedit", "/home/user/Desktop/a.txt"]}},
            {"type": "open", "parameters": {"path": "/home/user/Desktop/a.txt"}},
        ],
        "evaluator": {
            "func": "exact_match",
            "postconfig": [{"type": "execute", "parameters": {"command": ["sync"]}}],
        },
    },
    {
        "id": "setup-2",
        "domain": "os",
        "instruction": "never reached",
        "config": [
            {"type": "execute", "parameters": {"command": "true"}},
            {"type": "execute", "parameters": {"command": "cat /missing"}},
        ],
        "evaluator": {"func": "exact_match"},
        "x_fail_step": 1,
    },
]


def ms(iso: str) -> int:
    from datetime import datetime

    return round(datetime.fromisoformat(iso).timestamp() * 1000)


def test_the_tasks_setup_steps_are_set_up_entries_with_their_timing(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SETUP_CONFTEST)
    (pytester.path / "tasks.jsonl").write_text("\n".join(json.dumps(t) for t in SETUP_TASKS) + "\n")
    alluredir = pytester.path / "allure-results"
    run = pytester.runpytest_subprocess(
        "tasks.jsonl", *BASE_ARGS, "--osworld-run-id", "s1", "--osworld-keep-video", f"--alluredir={alluredir}"
    )
    assert run.parseoutcomes() == {"passed": 1, "masked": 1}
    pages = by_name(results(alluredir))
    good, bad = pages["os/setup-1"], pages["os/setup-2"]
    record = json.loads((pytester.path / "reports" / "s1" / "os" / "setup-1" / "result.json").read_text())

    setup = next(b for b in set_up_of(alluredir, good) if b["name"] == SETUP_ENTRY)
    assert [s["name"] for s in setup["steps"]] == [
        "execute: mkdir -p ~/Desktop",
        "launch: gedit /home/user/Desktop/a.txt",
        "open: /home/user/Desktop/a.txt",
    ]
    # Back to back, each 250 ms, ending where the setup phase (2 s after the episode's start) ends.
    starts = [s["start"] for s in setup["steps"]]
    stops = [s["stop"] for s in setup["steps"]]
    assert all(stop - start == 250 for start, stop in zip(starts, stops))
    assert starts[1:] == stops[:-1]
    assert stops[-1] == ms(record["started_at"]) + 2000
    assert (setup["start"], setup["stop"], setup["status"]) == (starts[0], stops[-1], "passed")
    assert setup["steps"][0]["parameters"] == [{"name": "result", "value": "exit 0"}]

    # Postconfig opens the evaluation (3 s before the end): the last step of the body.
    post = good["steps"][-1]
    assert post["name"] == POSTCONFIG_STEP
    assert [(s["name"], s["start"], s["stop"]) for s in post["steps"]] == [
        ("execute: sync", ms(record["finished_at"]) - 3000, ms(record["finished_at"]) - 2500)
    ]

    # A failing step: broken, with its error (secrets out) as the message; so is the entry and the task.
    failed = next(b for b in set_up_of(alluredir, bad) if b["name"] == SETUP_ENTRY)
    assert [(s["name"], s["status"]) for s in failed["steps"]] == [
        ("execute: true", "passed"),
        ("execute: cat /missing", "broken"),
    ]
    assert failed["status"] == "broken"
    assert failed["statusDetails"]["message"] == "exit 1: no such file (token=***)"
    assert bad["status"] == "broken" and bad["statusDetails"]["message"].startswith("masked (setup_error)")
    assert parameters(bad)["score"] == "-" and parameters(bad)["termination"] == "setup_error"

    # The description keeps the instruction verbatim; the video kept is linked.
    assert good["description"].startswith("Rename *report_v1* to report_final\n")
    assert "<p>Rename *report_v1* to report_final</p>" in good["descriptionHtml"]
    links = {link["name"]: link["url"] for link in good["links"]}
    video = pytester.path / "reports" / "s1" / "os" / "setup-1" / record["artifacts"]["recording"]
    assert video.is_file() and links["video"] == video.resolve().as_uri()
    assert "hunter2-secret-token" not in "".join(p.read_text(errors="replace") for p in alluredir.iterdir())


def test_a_test_that_is_not_a_task_keeps_its_fixtures(project: pytest.Pytester) -> None:
    project.makepyfile(test_own="def test_uses_the_run(osworld_run):\n    assert osworld_run.run_id == 'r1'\n")
    alluredir = project.path / "allure-results"
    run = project.runpytest(
        "tasks.jsonl", "test_own.py", *BASE_ARGS, "--osworld-run-id", "r1", f"--alluredir={alluredir}"
    )
    assert run.parseoutcomes()["passed"] == 2
    pages = by_name(results(alluredir))
    own = pages["test_uses_the_run"]
    assert "osworld_run" in [b["name"] for b in set_up_of(alluredir, own)]
    assert "description" not in own  # its docstring-less test function: nothing of a task
    assert "score" not in parameters(own)
    assert "osworld_run" not in [b["name"] for b in set_up_of(alluredir, pages["os/pass-1"])]


def test_pytest_html_shows_the_same_facts(project: pytest.Pytester) -> None:
    report = project.path / "report.html"
    run = project.runpytest(
        "tasks.jsonl", *BASE_ARGS, "--osworld-run-id", "r1", f"--html={report}", "--self-contained-html"
    )
    assert run.ret == 1
    text = report.read_text()
    data = json.loads(html.unescape(text.split('data-jsonblob="', 1)[1].split('"', 1)[0]))
    rows = {test_id: entries[-1] for test_id, entries in data["tests"].items()}
    passed = rows["tasks.jsonl::os/pass-1"]
    page = next(e["content"] for e in passed["extras"] if e["format_type"] == "html")
    assert "<p>do pass-1</p>" in page
    for name, value in (("score", "1"), ("termination", "done"), ("runner", "null"), ("model", "-"), ("repeat", "1")):
        assert f"<tr><th>{name}</th><td>{value}</td></tr>" in page
    links = {e["name"]: e["content"] for e in passed["extras"] if e["format_type"] == "url"}
    assert links["summary.json"] == (project.path / "reports" / "r1" / "summary.json").resolve().as_uri()

    masked = rows["tasks.jsonl::chrome/sbx-1"]
    assert masked["resultsTableRow"][0] == '<td class="col-result">Masked</td>'
    page = next(e["content"] for e in masked["extras"] if e["format_type"] == "html")
    assert "masked (sandbox_error): could not start the desktop" in page
    assert "<tr><th>score</th><td>-</td></tr>" in page
    assert rows["tasks.jsonl::os/fail-1"]["resultsTableRow"][0] == '<td class="col-result">Failed</td>'
    assert SECRET not in text
