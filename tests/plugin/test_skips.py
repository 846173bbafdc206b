"""What is known not to run here is skipped before any sandbox starts, with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.cli import main
from pytest_osworld.runnable import unrunnable_reason
from pytest_osworld.sandbox import SandboxConfigError
from pytest_osworld.sandbox.profiles import resolve, sandbox_provides
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.model import Task
from tests.support.paths import REPO
from tests.support.taskfactory import task, write_jsonl

pytestmark = pytest.mark.docker

# Episodes that end at once with a full score: the skip decision and the summary are the plugin's own,
# and no sandbox starts (the documented extension point: osworld_episode and osworld_sandbox).
INSTANT = """
import pytest

from pytest_osworld.record import TaskResult, Termination


@pytest.fixture
def osworld_sandbox():
    return object()


class Episode:
    def __init__(self, recorder, entry, run):
        self.recorder, self.entry, self.run = recorder, entry, run

    def run_and_judge(self):
        result = TaskResult(run_id=self.run.run_id, task_id=self.entry.id, domain=self.entry.domain,
                            termination=Termination.DONE, score=1.0, message="the agent said DONE")
        self.recorder.finish(result)
        return result


@pytest.fixture
def osworld_episode(osworld_sandbox, osworld_recorder, osworld_entry, osworld_run):
    return Episode(osworld_recorder, osworld_entry, osworld_run)
"""
ARGS = ("-p", "no:cacheprovider", "--osworld-agent", "null", "-rs")
GIMP = task(
    "gimp-1",
    domain="gimp",
    config=[
        {"type": "execute", "parameters": {"command": ["true"], "shell": False}},
        {"type": "launch", "parameters": {"command": ["gimp", "/home/user/a.png"]}},
    ],
)
LOGIN = task(
    "drive-1",
    domain="multi_apps",
    related_apps=["os"],
    config=[{"type": "login", "parameters": {"settings_file": "settings/google/s.json", "platform": "googledrive"}}],
)
# Applications the desktop image does not have (it has every one of OSWorld's domains).
AUDACITY = task(
    "audacity-1",
    domain="audacity",
    config=[{"type": "launch", "parameters": {"command": ["true"]}}],
)
OKULAR = task("okular-1", domain="okular", config=[{"type": "launch", "parameters": {"command": "okular a.pdf"}}])
AUDACITY_REASON = "unsupported on desktop: lacks app audacity (related app 0: audacity)"


def _model(raw: dict[str, Any]) -> Task:
    raw = dict(raw)
    raw.pop("domain")
    return Task.model_validate(raw)


def _summary(pytester: pytest.Pytester, run_id: str) -> dict[str, Any]:
    return dict(json.loads((pytester.path / "reports" / run_id / "summary.json").read_text()))


def test_a_task_needing_a_missing_app_is_skipped_with_the_reason(pytester: pytest.Pytester) -> None:
    write_jsonl(pytester.path / "t.jsonl", [{**AUDACITY, "solution": ["DONE"]}])
    result = pytester.runpytest_subprocess("t.jsonl", "--osworld-agent", "oracle", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    assert f"SKIPPED [1] t.jsonl: {AUDACITY_REASON}" in result.stdout.lines


def test_an_unrunnable_task_counts_in_the_all_view_and_not_in_valid(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(INSTANT)
    write_jsonl(pytester.path / "t.jsonl", [task("plain-1"), AUDACITY, LOGIN])
    result = pytester.runpytest("t.jsonl", *ARGS, "--osworld-run-id", "r1")
    result.assert_outcomes(passed=1, skipped=2)
    assert f"SKIPPED [1] t.jsonl: {AUDACITY_REASON}" in result.stdout.lines
    result.stdout.fnmatch_lines(
        [
            "*all *success*1/2*50.0%*(1 valid, 1 unrunnable on the sandbox counted as 0, 1 skipped left out)",
            "*valid *success*1/1*100.0%*(1 valid, 2 skipped left out)",
        ]
    )
    summary = _summary(pytester, "r1")
    views = summary["views"]
    # By hand: plain-1 passed; audacity-1 lacks audacity on desktop (in all, as 0); drive-1 needs credentials (the
    # engine's skip: in no denominator, and out of no_gdrive altogether).
    assert views["all"] == {
        "episodes": 2,
        "successes": 1,
        "success_rate": 0.5,
        "score_sum": 1.0,
        "raw_rate": 0.5,
        "passed": 1,
        "failed": 0,
        "masked": 0,
        "masked_apart": 0,
        "skipped": 1,
        "unrunnable": 1,
    }
    assert (views["valid"]["episodes"], views["valid"]["success_rate"]) == (1, 1.0)
    assert (views["valid"]["skipped"], views["valid"]["unrunnable"]) == (2, 0)
    assert (views["no_gdrive"]["episodes"], views["no_gdrive"]["success_rate"]) == (2, 0.5)
    assert (views["no_gdrive"]["skipped"], views["no_gdrive"]["unrunnable"]) == (0, 1)
    tasks = summary["tasks"]
    assert tasks["audacity/audacity-1"]["skip_kind"] == "unrunnable"
    assert tasks["multi_apps/drive-1"]["skip_kind"] == "unsupported" and tasks["multi_apps/drive-1"]["needs_gdrive"]
    assert "skip_kind" not in tasks["os/plain-1"]
    assert (summary["integrity"]["skipped"], summary["integrity"]["unrunnable"]) == (2, 1)
    assert summary["skips"][AUDACITY_REASON] == 1
    record = json.loads((pytester.path / "reports" / "r1" / "audacity" / "audacity-1" / "result.json").read_text())
    assert record["termination"] == "unsupported" and "unrunnable" in record["markers"]
    assert record["message"] == AUDACITY_REASON


def test_a_profile_declaring_apps_decides_for_that_profile(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makeconftest(INSTANT)
    chrome = task("chrome-1", domain="chrome")
    tasks = write_jsonl(pytester.path / "t.jsonl", [AUDACITY, chrome])
    plain = pytester.runpytest("t.jsonl", *ARGS, "--osworld-run-id", "plain")
    plain.assert_outcomes(passed=1, skipped=1)
    assert _summary(pytester, "plain")["tasks"]["audacity/audacity-1"]["status"] == "skipped"

    # The declared list wins over the image's manifest: audacity is there, chrome is not.
    profile = pytester.path / "p.yaml"
    profile.write_text("sandbox_profiles:\n  desktop:\n    apps: [audacity, terminal]\n")
    declared = pytester.runpytest("t.jsonl", *ARGS, "--osworld-run-id", "declared", "--osworld-profile", str(profile))
    declared.assert_outcomes(passed=1, skipped=1)
    declared.stdout.fnmatch_lines(["SKIPPED*unsupported on desktop: lacks app chrome (related app 0: chrome)"])
    statuses = {k: t["status"] for k, t in _summary(pytester, "declared")["tasks"].items()}
    assert statuses == {"audacity/audacity-1": "passed", "chrome/chrome-1": "skipped"}

    # The report reads the same profile and says the same.
    capsys.readouterr()
    assert main(["tasks", "support", str(tasks), "--json", "--profile", str(profile)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {k: row["runnable"] for k, row in report["tasks"].items()} == {
        "audacity/audacity-1": True,
        "chrome/chrome-1": False,
    }
    assert "apps declared by sandbox_profiles.desktop.apps" in report["sandbox"]["source"]


def test_declared_apps_answer_for_an_image_without_a_manifest() -> None:
    own = {"image": "pytest-osworld/no-such-image:never", "apps": ["GIMP", "vs code"]}
    settings = Settings(sandbox="mine", sandbox_profiles={"mine": own})
    found = sandbox_provides(settings)
    assert found.known and found.apps == {"gimp", "vs_code"} and found.commands is None
    assert "commands not checked" in found.source
    assert unrunnable_reason(_model(GIMP), found) is None  # its command needs are not checked
    assert unrunnable_reason(_model(task("c", domain="chrome")), found) == (
        "unsupported on mine: lacks app chrome (related app 0: chrome)"
    )
    assert resolve(settings).apps == ["GIMP", "vs code"]
    with pytest.raises(SandboxConfigError, match=r"sandbox_profiles.mine.apps: expected a list"):
        sandbox_provides(Settings(sandbox="mine", sandbox_profiles={"mine": {**own, "apps": "gimp"}}))


def test_an_unknown_sandbox_skips_nothing_and_says_so(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(INSTANT)
    write_jsonl(pytester.path / "t.jsonl", [AUDACITY, task("chrome-1", domain="chrome")])
    # An image that is not there has no manifest to read: nothing is skipped for it, and the run says so
    # (then the session's check stops the run before any task, as it would without this check).
    (pytester.path / "p.yaml").write_text(
        "sandbox: nowhere\nsandbox_profiles:\n  nowhere:\n    image: pytest-osworld/no-such-image:never\n"
    )
    result = pytester.runpytest("t.jsonl", *ARGS, "--osworld-profile", "p.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["osworld: what sandbox nowhere provides is unknown (*); no task is skipped for lacking an app or command*"]
    )
    assert "SKIPPED" not in result.stdout.str()
    result.stderr.fnmatch_lines(["*the sandbox profile 'nowhere' cannot run here*"])


def test_the_report_and_a_run_agree_on_the_desktop(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    bundled = (REPO / "tasks" / "examples.jsonl").read_text(encoding="utf-8")
    tasks = pytester.path / "t.jsonl"
    tasks.write_text(bundled + json.dumps(AUDACITY) + "\n" + json.dumps(OKULAR) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["tasks", "support", str(tasks), "--json", "--sandbox", "desktop"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sandbox"]["known"], report["sandbox"]["problem"]
    assert report["total"] == 15 and report["runnable"] == 13

    pytester.makeconftest(INSTANT)
    result = pytester.runpytest("t.jsonl", *ARGS, "--osworld-run-id", "agree")
    result.assert_outcomes(passed=13, skipped=2)  # every bundled task runs
    summary = _summary(pytester, "agree")
    skipped = {k for k, t in summary["tasks"].items() if t["status"] == "skipped"}
    assert (
        skipped
        == {k for k, row in report["tasks"].items() if not row["runnable"]}
        == {"audacity/audacity-1", "okular/okular-1"}
    )
    assert all(summary["tasks"][k]["skip_kind"] == "unrunnable" for k in skipped)
    # Each skip names what the report says the sandbox lacks, with the same causes.
    for key in sorted(skipped):
        lacks = "; ".join(f"{label} ({', '.join(causes)})" for label, causes in report["tasks"][key]["lacks"].items())
        assert summary["skips"][f"unsupported on desktop: lacks {lacks}"] == 1
    assert summary["views"]["all"]["episodes"] == 15 and summary["views"]["valid"]["episodes"] == 13


def test_a_skipped_task_of_a_split_file_is_reported_cleanly(pytester: pytest.Pytester) -> None:
    # A task read from an example file has no line number of its own; skip reports need one.
    examples = pytester.path / "evaluation_examples"
    raw = task("s1", evaluator={"func": "no_such_metric_here"})
    raw.pop("domain")
    (examples / "examples" / "os").mkdir(parents=True)
    (examples / "examples" / "os" / "s1.json").write_text(json.dumps(raw))
    (examples / "test_x.json").write_text(json.dumps({"os": ["s1"]}))
    result = pytester.runpytest_subprocess(
        str(examples / "test_x.json"), "--osworld-agent", "oracle", "-rs", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(skipped=1)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([f"SKIPPED*{Path('examples') / 'os' / 's1.json'}*no_such_metric_here*"])


def test_tasks_needing_google_credentials_are_skipped_before_any_sandbox(pytester: pytest.Pytester) -> None:
    login = [
        {"type": "login", "parameters": {"settings_file": "settings/google/settings.json", "platform": "googledrive"}}
    ]
    drive = {
        "func": "compare_pdfs",
        "result": {"type": "googledrive_file", "settings_file": "s.json", "path": ["a.pdf"], "dest": "a.pdf"},
        "expected": {"type": "rule", "rules": {}},
    }
    write_jsonl(
        pytester.path / "t.jsonl",
        [
            task("login-step", domain="multi_apps", config=login, solution=["DONE"]),
            task("drive-getter", domain="multi_apps", evaluator=drive, solution=["DONE"]),
        ],
    )
    # A sandbox profile whose image does not exist: starting any sandbox would be an error, not a skip.
    (pytester.path / "p.yaml").write_text(
        "sandbox: nowhere\nsandbox_profiles:\n  nowhere:\n    image: pytest-osworld/no-such-image:never\n"
    )
    result = pytester.runpytest_subprocess(
        "t.jsonl", "--osworld-agent", "oracle", "--osworld-profile", "p.yaml", "-rs", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*unsupported here: needs Google credentials (step login)*",
            "*unsupported here: needs Google credentials (getter googledrive_file)*",
        ]
    )
