"""Reports over real runs of the bundled tasks: records, upstream files, summary, JUnit, Allure,
pytest-html, resume, shard merge and the gate."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.cli import main as cli_main
from tests.episode.runs import BUNDLED, run_tasks
from tests.support.shared_runs import SharedRun

pytestmark = pytest.mark.docker


OS_TASKS = "os- and not refresh"  # four quick tasks that write files (-k os alone matches the osworld marker)
REPEATED = "os-notes or os-rename"


def test_records_upstream_files_summary_junit_allure_html(bundled_oracle: SharedRun) -> None:
    run, folder = bundled_oracle, bundled_oracle.folder
    records = run.records()
    count = len(records)
    assert count >= 30 and count == run.result.parseoutcomes()["passed"]
    for key, record in records.items():
        task_folder = run.run_dir / key
        assert (task_folder / "result.txt").read_text().strip() in ("1.0", "1"), key
        steps = [json.loads(line) for line in (task_folder / "traj.jsonl").read_text().splitlines()]
        assert [s["step_num"] for s in steps] == sorted(s["step_num"] for s in steps)
        assert {"step_num", "action_timestamp", "action", "reward", "done", "info", "screenshot_file"} <= set(steps[0])
        assert (task_folder / "step_1.png").read_bytes().startswith(b"\x89PNG"), key
        assert (task_folder / "final.png").read_bytes().startswith(b"\x89PNG"), key
        assert record["durations"]["total"] > 0 and record["durations"]["sandbox_ready"] > 0, key
        assert record["sandbox"]["image_id"].startswith("sha256:"), key

    # summary.json, recomputed from the records
    summary = run.summary()
    valid = [r for r in records.values() if not r["masked"]]
    assert sum(1 for r in valid if r["score"] == 1.0) == count
    assert (summary["views"]["all"]["successes"], summary["views"]["all"]["episodes"]) == (count, count)
    manifest = json.loads((run.run_dir / "manifest.json").read_text())
    assert manifest["selected"]["count"] == count
    assert manifest["runner"] == "oracle"
    image = manifest["sandbox"]["hosts"][0]["image"]
    assert image["digest"].startswith("sha256:") and image["present"] is True
    # What the run ran on: the versions of the image's applications, read off the image.
    assert image["manifest"]["applications"]["chromium"]["version"]
    assert summary["identity"]["sandbox"]["hosts"][0]["image"]["digest"] == image["digest"]
    assert summary["identity"]["input_sha256"] == manifest["input"]["input_sha256"]

    # JUnit: the score as a property of each case
    cases = ET.parse(folder / "junit.xml").getroot().iter("testcase")
    scores = {c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")} for c in cases}
    assert len(scores) == count and all(props.get("osworld_score") == "1" for props in scores.values())

    # Allure, written by both workers: a result per test, a step per action, PNG attachments
    results = [json.loads(p.read_text()) for p in (folder / "allure").glob("*-result.json")]
    assert len(results) == count and {r["status"] for r in results} == {"passed"}
    steps = [s for r in results for s in r.get("steps", [])]
    assert steps and all(s["name"].startswith("step ") for s in steps)
    pngs = [a for s in steps for a in s.get("attachments", []) if a["type"] == "image/png"]
    assert pngs and all((folder / "allure" / a["source"]).read_bytes().startswith(b"\x89PNG") for a in pngs)
    labels = {(lb["name"], lb["value"]) for r in results for lb in r["labels"]}
    assert ("feature", "os") in labels and ("feature", "libreoffice_calc") in labels

    # pytest-html: the score and the final screenshot in the row
    html = (folder / "report.html").read_text()
    assert "data:image/png;base64" in html or "image/png" in html
    assert "1.0" in html or "score" in html.lower()


def _summary_figures(summary: dict[str, Any]) -> object:
    views = summary.get("views", summary)
    return json.loads(json.dumps(views, sort_keys=True))


def test_two_shards_merge_into_the_unsharded_summary(pytester: pytest.Pytester) -> None:
    whole = run_tasks(pytester, BUNDLED, "-k", OS_TASKS, "--osworld-agent", "oracle", run_id="whole")
    first = run_tasks(
        pytester, BUNDLED, "-k", OS_TASKS, "--osworld-agent", "oracle", "--osworld-shard", "1/2", run_id="s1"
    )
    second = run_tasks(
        pytester, BUNDLED, "-k", OS_TASKS, "--osworld-agent", "oracle", "--osworld-shard", "2/2", run_id="s2"
    )
    counts = [first.result.parseoutcomes().get("passed", 0), second.result.parseoutcomes().get("passed", 0)]
    assert sorted(counts) == [2, 2]
    merged = pytester.path / "merged"
    assert cli_main(["report", "merge", str(first.run_dir), str(second.run_dir), "-o", str(merged)]) == 0
    ours = json.loads((merged / "summary.json").read_text())
    theirs = whole.summary()
    for view in ("all", "valid", "no_gdrive"):
        assert ours["views"][view] == theirs["views"][view], view
    assert ours["domains"] == theirs["domains"]


def test_resume_after_a_killed_run_runs_only_what_is_missing(pytester: pytest.Pytester, tmp_path: Path) -> None:
    reports = pytester.path / "reports"
    run_dir = reports / "killed"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            str(BUNDLED),
            "-p",
            "no:cacheprovider",
            "-k",
            OS_TASKS,
            "--osworld-agent",
            "oracle",
            "--osworld-report-dir",
            str(reports),
            "--osworld-run-id",
            "killed",
        ],
        cwd=pytester.path,
        stdout=open(tmp_path / "out", "w"),  # noqa: SIM115 - the child holds it until it ends
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list(run_dir.glob("os/*/result.json"))) >= 2:
            break
        time.sleep(0.2)  # poll for two finished tasks
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    done_before = {
        p.parent.name for p in run_dir.glob("os/*/result.json") if json.loads(p.read_text())["termination"] == "done"
    }
    assert 2 <= len(done_before) < 4, (tmp_path / "out").read_text()

    resumed = run_tasks(
        pytester,
        BUNDLED,
        "-k",
        OS_TASKS,
        "--osworld-agent",
        "oracle",
        "-v",
        "--osworld-resume",
        str(run_dir),
        run_id=None,
    )
    ran = {
        line.split("::")[1].split()[0].split("/")[1]
        for line in resumed.result.stdout.lines
        if "::os/" in line and ("PASSED" in line or "FAILED" in line)
    }
    assert ran and ran.isdisjoint(done_before)
    assert ran | done_before == {"os-notes-folder", "os-rename-report", "os-make-executable", "os-zip-reports"}
    final = {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("os/*/result.json")}
    assert len(final) == 4 and all(r["score"] == 1.0 for r in final.values())


def test_repeats_on_a_real_run(pytester: pytest.Pytester) -> None:
    run = run_tasks(pytester, BUNDLED, "-k", REPEATED, "--osworld-agent", "oracle", "--osworld-repeat", "2")
    run.result.assert_outcomes(passed=4)
    assert sorted(run.records()) == ["os/os-notes-folder", "os/os-rename-report"]  # repeat 1's folders
    assert sorted(p.parent.name for p in run.run_dir.glob("os/*/result.json")) == [
        "os-notes-folder",
        "os-notes-folder#r2",
        "os-rename-report",
        "os-rename-report#r2",
    ]
    repeats = run.summary()["repeats"]
    assert (repeats["k"], repeats["tasks"], repeats["pass_at_k"], repeats["pass_hat_k"]) == (2, 2, 1.0, 1.0)
    assert repeats["flaky_tasks"] == [] and repeats["std_success_rate"] == 0.0
    run.result.stdout.fnmatch_lines(["*repeats    k=2 over 2 tasks: pass@2 2/2 100.0%, pass^2 2/2 100.0%*"])


def test_the_paired_gate_on_real_runs(
    bundled_oracle: SharedRun, bundled_null: SharedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The null control against the oracle over every bundled task: the drop is significant (the null run
    was started with the oracle's summary as its baseline); one task lost is noise."""
    tasks = len(bundled_oracle.records())
    assert bundled_null.result.parseoutcomes()["failed"] == tasks
    p = f"{2 * 0.5**tasks:.2g}"  # the exact paired test: every task lost, none won
    assert bundled_null.result.ret == 1  # the gate, not the failed tasks, decides: a significant drop
    bundled_null.result.stdout.fnmatch_lines(
        ["gate: FAILED, exit status 1", f"*drop 100.0 points, p = {p}: significant (p < alpha 0.05)*"]
    )
    baseline = bundled_oracle.run_dir / "summary.json"
    assert cli_main(["report", "compare", str(baseline), str(bundled_null.run_dir), "--max-drop", "2"]) == 1
    assert f"p = {p}" in capsys.readouterr().out
    assert cli_main(["report", "compare", str(baseline), str(bundled_null.run_dir), "--max-drop", "100"]) == 0

    # A copy of the oracle run with one task's score set to 0: 100/tasks points, within noise.
    copy = tmp_path / "copy"
    shutil.copytree(bundled_oracle.run_dir, copy)
    result_file = copy / "os" / "os-rename-report" / "result.json"
    result_file.write_text(json.dumps(json.loads(result_file.read_text()) | {"score": 0.0}))
    assert cli_main(["report", "summarize", str(copy), "--write"]) == 0
    capsys.readouterr()
    assert cli_main(["report", "compare", str(baseline), str(copy), "--max-drop", "2"]) == 0
    out = capsys.readouterr().out
    assert f"drop {100 / tasks:.1f} points, p = 1.00: not significant (within noise)" in out, out
    assert "worse (1): os/os-rename-report" in out, out
    assert cli_main(["report", "compare", str(baseline), str(copy), "--max-drop", "2", "--gate", "fixed"]) == 1
