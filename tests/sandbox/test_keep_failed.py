"""``--osworld-keep-failed 1`` over the null control, in real runs of the bundled quick os-* tasks.

One run (two xdist workers, a warm pool, stdin a real terminal: a pty, the live page on) is watched from
a thread that polls the engine for the run's containers: after the first failure exactly one sandbox of
the run is kept running, never two, `pytest-osworld sandboxes` lists it with its task and why, the run's
end waits for Enter (meanwhile the live page lists the kept sandbox with its task and why, its desktop
still watchable, and names the final page), and once Enter is pressed no container of the run is left.
Its reports link each task's last screenshot and the run folder holds the final page. A second run is
stopped with Ctrl-C once it keeps a sandbox: nothing of it is left either.
"""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest

from pytest_osworld.sandbox import KEPT_MARK, LABEL_MANAGED, LABEL_RUN_ID, LABEL_TASK, KeptWhy
from tests.sandbox import support
from tests.support.paths import REPO

pytestmark = pytest.mark.docker

TASKS = REPO / "tasks" / "examples.jsonl"
# Three quick os-* tasks; the null agent says DONE at once, so every one fails with score 0.
QUICK = "os-notes-folder or os-make-executable or os-refresh-rate"
QUICK_KEYS = {"os/os-notes-folder", "os/os-make-executable", "os/os-refresh-rate"}
PROMPT = "osworld: press Enter to remove them"
LIVE_HEADER = re.compile(r"osworld: live page at (http://127\.0\.0\.1:\d+/)")


@dataclass
class Watch:
    """What a thread saw of a run's containers on the engine, polled until the run ended."""

    # (asked at, answered at, the run's running containers, those of them kept), monotonic seconds
    samples: list[tuple[float, float, list[str], list[str]]] = field(default_factory=list)
    listing: str = ""  # `pytest-osworld sandboxes --run-id` while a sandbox was kept
    first_kept: float | None = None

    @property
    def most_kept(self) -> int:
        return max((len(kept) for *_, kept in self.samples), default=0)


def start(cwd: Path, run_id: str, *args: str, stdin: int | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            str(TASKS),
            "-p",
            "no:cacheprovider",
            "-k",
            QUICK,
            "--osworld-agent",
            "null",
            "--osworld-run-id",
            run_id,
            "--osworld-report-dir",
            str(cwd / "reports"),
            "--osworld-keep-failed",
            "1",
            "-p",
            "xdist",
            "-n",
            "2",
            *args,
        ],
        cwd=cwd,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, like a terminal's foreground job
    )


def running(engine: docker.DockerClient, run_id: str) -> list[Any]:
    found: list[Any] = engine.containers.list(
        filters={"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={run_id}"], "status": "running"}, sparse=True
    )
    return found


def watch(engine: docker.DockerClient, run_id: str, process: subprocess.Popen[bytes], seen: Watch) -> None:
    while process.poll() is None:
        asked = time.monotonic()
        names = [str((c.attrs.get("Names") or ["?"])[0]).lstrip("/") for c in running(engine, run_id)]
        kept = [name for name in names if KEPT_MARK in name]
        seen.samples.append((asked, time.monotonic(), names, kept))
        if kept and seen.first_kept is None:
            seen.first_kept = time.monotonic()
            listed = subprocess.run(
                [sys.executable, "-m", "pytest_osworld.cli", "sandboxes", "--run-id", run_id],
                capture_output=True,
                text=True,
                timeout=60,
            )
            seen.listing = listed.stdout + listed.stderr
        time.sleep(0.2)  # the engine is polled, the run is not waited on


class Output:
    """A child's output, read by a thread as it comes."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.text = ""
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for line in iter(process.stdout.readline, b""):
            self.text += line.decode("utf-8", "replace")

    def wait_for(self, text: str, process: subprocess.Popen[bytes], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.text:
                return True
            if process.poll() is not None:
                self._thread.join(10)
                return text in self.text
            time.sleep(0.1)
        return False

    def done(self) -> str:
        self._thread.join(30)
        return self.text


@dataclass
class KeptRun:
    run_id: str
    run_dir: Path
    returncode: int
    output: str
    seen: Watch
    at_prompt: list[str]  # the run's running containers while the run's end waited for Enter
    live_at_prompt: dict[str, Any]  # the live page's state (/api/state) while the run's end waited for Enter
    enter_at: float | None  # when Enter was pressed (monotonic)
    seconds: float
    after: list[str]  # the run's containers (any state) once it ended
    project: Path


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory: pytest.TempPathFactory, engine: docker.DockerClient) -> Iterator[KeptRun]:
    project = tmp_path_factory.mktemp("keep-failed")
    (project / "pytest.ini").write_text("[pytest]\n")
    run_id = f"keep-{os.urandom(4).hex()}"
    master, slave = pty.openpty()
    begun = time.monotonic()
    process = start(
        project,
        run_id,
        "--osworld-warm-pool",
        "1",
        "--osworld-keep-failed-until-exit",
        "--osworld-keep-failed-timeout",
        "120",
        "--osworld-live",
        "0",
        "-v",
        "--html",
        str(project / "report.html"),
        "--self-contained-html",
        f"--alluredir={project / 'allure'}",
        stdin=slave,
    )
    os.close(slave)
    output = Output(process)
    seen = Watch()
    watcher = threading.Thread(target=watch, args=(engine, run_id, process, seen), daemon=True)
    watcher.start()
    at_prompt: list[str] = []
    live_at_prompt: dict[str, Any] = {}
    enter_at: float | None = None
    try:
        if output.wait_for(PROMPT, process, 240):
            at_prompt = [str((c.attrs.get("Names") or ["?"])[0]).lstrip("/") for c in running(engine, run_id)]
            page = LIVE_HEADER.search(output.text)
            if page is not None:  # the page serves until the run's process ends, after this wait
                live_at_prompt = httpx.get(page[1] + "api/state", trust_env=False, timeout=30).json()
            enter_at = time.monotonic()
            os.write(master, b"\n")  # Enter, on the run's terminal
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        os.close(master)
    watcher.join(30)
    yield KeptRun(
        run_id=run_id,
        run_dir=project / "reports" / run_id,
        returncode=process.returncode,
        output=output.done(),
        seen=seen,
        at_prompt=at_prompt,
        live_at_prompt=live_at_prompt,
        enter_at=enter_at,
        seconds=time.monotonic() - begun,
        after=support.run_containers(engine, run_id),
        project=project,
    )
    support.remove_run(engine, run_id)


def test_exactly_one_sandbox_is_kept_after_the_first_failure(kept_run: KeptRun) -> None:
    run = kept_run
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.output
    assert run.output.count(" FAILED") >= 3, run.output
    seen = run.seen
    assert seen.first_kept is not None, run.output
    assert seen.most_kept == 1, [s for s in seen.samples if len(s[2]) > 1]
    # From the first failure until Enter, one kept sandbox runs in every sample, whatever runs beside it.
    assert run.enter_at is not None, run.output
    between = [kept for asked, answered, _, kept in seen.samples if asked > seen.first_kept and answered < run.enter_at]
    assert between and all(len(kept) == 1 for kept in between)
    assert len({kept[0] for kept in between}) == 1
    # While the run's end waits for Enter, the workers are gone: it is the only container of the run.
    assert len(run.at_prompt) == 1 and KEPT_MARK + "failed-score-0" in run.at_prompt[0], run.output
    assert run.after == [], run.output


def test_the_sandboxes_command_lists_it_with_its_task(kept_run: KeptRun) -> None:
    lines = [line for line in kept_run.seen.listing.splitlines() if "kept:" in line]
    assert len(lines) == 1, kept_run.seen.listing
    [line] = lines
    key = next((key for key in QUICK_KEYS if f" {key}: " in line), None)
    assert key is not None, line
    # Its sandbox came from a warm pool (no task in its labels): the name it was kept under names the task.
    assert f"run {kept_run.run_id}" in line and "kept: failed with score 0" in line
    assert "api http://127.0.0.1:" in line and "live view vnc://127.0.0.1:" in line
    record = json.loads((kept_run.run_dir / key / "result.json").read_text())
    assert record["sandbox"]["kept"]["why"] == "failed with score 0"


def test_the_live_page_lists_it_with_its_task_and_why(kept_run: KeptRun) -> None:
    state = kept_run.live_at_prompt
    assert state, kept_run.output
    tasks = {t["key"]: t for t in state["tasks"]}
    assert set(tasks) == QUICK_KEYS
    kept = [t for t in tasks.values() if t["kept"] is not None]
    assert len(kept) == 1, tasks
    [task] = kept
    assert task["kept"] == "failed with score 0" and task["state"] == "failed"
    assert KEPT_MARK + "failed-score-0" in task["sandbox"] and task["sandbox"] in kept_run.at_prompt
    assert task["watchable"] is True  # its desktop is still there while the run's end waits
    assert all(not t["watchable"] for t in tasks.values() if t is not task)
    run = state["run"]
    assert run["counts"]["kept"] == 1 and run["counts"]["failed"] == 3
    # The run's end had come: the page names the final page, written from the records beside it.
    assert run["ended"] is not None
    assert Path(run["final_page"]).resolve() == (kept_run.run_dir / "live.html").resolve()


def test_the_terminal_says_what_was_kept_and_where(kept_run: KeptRun) -> None:
    text = kept_run.output
    kept = [line for line in text.splitlines() if line.startswith("osworld: kept for a look until the run ends: ")]
    assert len(kept) == 1, text
    assert "(failed with score 0): container pytest-osworld-" in kept[0] and "live view vnc://" in kept[0]
    assert "osworld: 1 sandbox of failed or masked tasks kept for a look" in text
    assert "osworld: Enter pressed; removing the kept sandboxes" in text
    assert "osworld kept sandboxes" in text and "kept for a look, removed at the run's end:" in text


def test_records_are_untouched_but_for_the_note(kept_run: KeptRun) -> None:
    records = {
        f"{r['domain']}/{r['task_id']}": r
        for r in (json.loads(p.read_text()) for p in kept_run.run_dir.glob("os/*/result.json"))
    }
    assert set(records) == QUICK_KEYS
    assert all(r["score"] == 0.0 and r["termination"] == "done" for r in records.values())
    noted = [key for key, r in records.items() if "kept" in r["sandbox"]]
    assert len(noted) == 1
    # The kept sandbox was its task's alone: no other task was handed it (the warm pool hands each one out once).
    names = [r["sandbox"]["name"] for r in records.values()]
    assert len(set(names)) == 3
    ledger = json.loads((kept_run.run_dir / "kept_sandboxes.json").read_text())
    assert [entry["key"] for entry in ledger["kept"]] == noted
    assert ledger["kept"][0]["name"] == records[noted[0]]["sandbox"]["name"] + KeptWhy("failed", "0").mark(noted[0])


def test_reports_link_each_tasks_last_screenshot(kept_run: KeptRun) -> None:
    run_dir = kept_run.run_dir
    report = (kept_run.project / "report.html").read_text()
    data = json.loads(unescape(report.split('data-jsonblob="', 1)[1].split('"', 1)[0]))
    allure = [json.loads(p.read_text()) for p in (kept_run.project / "allure").glob("*-result.json")]
    for key in QUICK_KEYS:
        final = (run_dir / key / "final.png").resolve()
        assert final.is_file(), key
        row = next(entries[-1] for test_id, entries in data["tests"].items() if test_id.endswith(key))
        html_links = {e["name"]: e["content"] for e in row["extras"] if e["format_type"] == "url"}
        assert html_links["last screenshot"] == final.as_uri()
        page = next(r for r in allure if r["name"] == key)
        assert {link["name"]: link["url"] for link in page["links"]}["last screenshot"] == final.as_uri()
    # No video was recorded in this run (--osworld-keep-video is off): none is linked.
    assert "video" not in html_links


def test_the_final_page_is_in_the_run_folder(kept_run: KeptRun) -> None:
    page = (kept_run.run_dir / "live.html").read_text()
    for key in QUICK_KEYS:
        assert f'<td>{key}</td><td class="failed">failed: score 0' in page
        assert f'href="{key}/final.png"' in page
    assert page.count('src="data:image/jpeg;base64,') == 3
    assert "sandbox kept for a look (failed with score 0)" in page
    assert "<td>0/3</td>" in page  # the all view's successes over its episodes


def test_ctrl_c_removes_the_kept_sandbox(tmp_path: Path, run_id: str, engine: docker.DockerClient) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    begun = time.monotonic()
    # No terminal (stdin at its end): the run's end would wait its whole timeout, so only Ctrl-C ends it
    # early, whether it comes while tasks still run or while the end waits.
    process = start(tmp_path, run_id, "--osworld-keep-failed-until-exit", stdin=subprocess.DEVNULL)
    output = Output(process)
    kept: list[Any] = []
    deadline = time.monotonic() + 240
    while not kept and process.poll() is None and time.monotonic() < deadline:
        kept = [c for c in running(engine, run_id) if KEPT_MARK in str((c.attrs.get("Names") or [""])[0])]
        time.sleep(0.2)  # polls the engine for the first kept sandbox
    assert kept, output.done()
    assert process.poll() is None
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
    try:
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    text = output.done()
    seconds = time.monotonic() - begun
    assert process.returncode in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED), text
    assert "interrupted" in text.lower(), text
    assert support.run_containers(engine, run_id) == [], text
    assert (kept[0].attrs.get("Labels") or {}).get(LABEL_TASK) in QUICK_KEYS
    assert seconds < 200, f"the run took {seconds:.0f} s: it waited for its timeout instead of ending at Ctrl-C"


V2_TASK = """
from desktop_env.task_base import BaseTask


class Kept(BaseTask):
    id = "kept-v2"
    instruction = "Nothing to do: the evaluation gives 0"
    solution = ["DONE"]

    def evaluate(self, env):
        return 0.0


TASK_CLASS = Kept
"""


def test_an_osworld_v2_tasks_sandbox_is_kept_until_a_line_is_read(
    tmp_path: Path, run_id: str, engine: docker.DockerClient
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "v2" / "task_class").mkdir(parents=True)
    (tmp_path / "v2" / "task_class" / "task_kept-v2.py").write_text(V2_TASK)
    (tmp_path / "v2" / "test_v2.json").write_text(json.dumps({"tasks": ["kept-v2"]}))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "v2/test_v2.json",
            "-p",
            "no:cacheprovider",
            "--osworld-agent",
            "null",
            "--osworld-run-id",
            run_id,
            "--osworld-keep-failed",
            "1",
            "--osworld-keep-failed-until-exit",
        ],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    output = Output(process)
    try:
        # No terminal: the run's end says so and waits for a line on stdin (or its timeout).
        assert output.wait_for("stdin is not a tty", process, 240), output.done()
        kept = [c for c in running(engine, run_id) if KEPT_MARK in str((c.attrs.get("Names") or [""])[0])]
        assert len(kept) == 1 and (kept[0].attrs.get("Labels") or {}).get(LABEL_TASK) == "v2/kept-v2"
        assert process.stdin is not None
        process.stdin.write(b"\n")
        process.stdin.flush()
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    text = output.done()
    assert process.returncode == pytest.ExitCode.TESTS_FAILED, text
    assert "osworld: a line was read from stdin; removing the kept sandboxes" in text
    record = json.loads((tmp_path / "reports" / run_id / "v2" / "kept-v2" / "result.json").read_text())
    assert record["score"] == 0.0 and record["sandbox"]["kept"]["why"] == "failed with score 0"
    assert support.run_containers(engine, run_id) == [], text
