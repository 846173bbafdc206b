"""A real run with ``--osworld-live``, watched from headless Chromium while it runs.

One run of two bundled os tasks on two xdist workers, with ``--osworld-live-input``; a scripted model
whose every answer waits until the test gives it, so each state can be looked at while it lasts:

- the watched task: its row on the live page goes from step 1 to step 2 of 5; its watch link opens the
  desktop in noVNC (not blank, 1920x1080); a read-only view's keys and clicks, sent by the browser, are
  dropped (the desktop's event logger, ``xev``, logs none); its next action closes the logger and the
  canvas changes;
- the touched task: a view that asked for control sends a key, which the logger receives; the task is
  masked ``human_interference`` and its record says when.

The pages are saved as screenshots in the module's output folder.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import docker
import httpx
import pytest

from tests.episode.runs import BUNDLED, Run, bundled_task
from tests.support.browser import Chromium, Tab
from tests.support.model_server import ModelServer, RecordedRequest, Reply, Status
from tests.support.polling import poll_until, wait_for

pytestmark = pytest.mark.docker

WATCHED = "os/os-notes-folder"
TOUCHED = "os/os-rename-report"
MAX_STEPS = 5
ANSWER_WAIT_S = 150.0
IMAGE_BUILD_S = 1200.0  # the desktop image is built on first use (a few minutes), by whichever run needs it first
LOGGER = (
    "```python\nimport subprocess\n"
    # An event logger filling most of the screen, focused: what reaches the desktop's keyboard and
    # pointer is written to /tmp/keys.txt.
    "subprocess.Popen('exec stdbuf -oL xev -event keyboard -event button -geometry 1600x900+160+90 "
    "> /tmp/keys.txt 2>&1', shell=True, start_new_session=True, stdin=subprocess.DEVNULL, "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "subprocess.run(['xdotool', 'search', '--sync', '--name', 'Event Tester', 'windowactivate', '--sync'], "
    "timeout=30, check=False)\n```"
)
CLOSE_LOGGER = (
    "```python\nimport subprocess\nsubprocess.run(['pkill', '-x', 'xev'], check=False)\n"
    "subprocess.run(['xsetroot', '-solid', '#b03030'], check=False)\n```"
)
CANVAS = """(() => {
  const canvas = document.querySelector('#screen canvas');
  if (!canvas || !canvas.width) return null;
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  const colors = new Set();
  let hash = 0;
  for (let i = 0; i < data.length; i += 4 * 37) {
    const rgb = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    colors.add(rgb);
    hash = (hash * 31 + rgb) | 0;
  }
  return {width: canvas.width, height: canvas.height, colors: colors.size, hash: hash};
})()"""
_DROPPED_ENV = ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


class Gate:
    """The scripted model: each task (told apart by its instruction) gets the answers the test gives, one
    per request, each request waiting for its answer."""

    def __init__(self, server: ModelServer) -> None:
        self.instructions = {key: bundled_task(key.split("/")[1])["instruction"] for key in (WATCHED, TOUCHED)}
        self.answers: dict[str, queue.Queue[str]] = {key: queue.Queue() for key in self.instructions}
        self.closed = threading.Event()
        server.respond_with("scripted", self._respond)

    def _respond(self, request: RecordedRequest) -> Reply | Status:
        text = request.text()
        key = next((k for k, instruction in self.instructions.items() if instruction in text), None)
        if key is None:
            return Status(400, {"error": {"message": "no task's instruction in the prompt"}})
        if self.closed.is_set():
            return Reply("DONE")
        try:
            return Reply(self.answers[key].get(timeout=ANSWER_WAIT_S))
        except queue.Empty:
            return Reply("FAIL")

    def give(self, key: str, answer: str) -> None:
        self.answers[key].put(answer)

    def close(self) -> None:
        self.closed.set()
        for answers in self.answers.values():
            for _ in range(MAX_STEPS):
                answers.put("DONE")


@dataclass
class Seen:
    """What the test saw while the run went on, for the tests below to judge."""

    folder: Path
    run: Run | None = None
    seconds: float = 0.0
    states: list[str] = field(default_factory=list)  # the watched task's state on the page, in order
    first_page: dict[str, Any] = field(default_factory=dict)
    canvas_before: dict[str, Any] = field(default_factory=dict)
    canvas_after: dict[str, Any] = field(default_factory=dict)
    dropped: int = 0
    watched_log: str = ""
    touched_log: str = ""
    touched_at: str | None = None
    final_rows: dict[str, str] = field(default_factory=dict)
    final_figures: str = ""
    shots: dict[str, Path] = field(default_factory=dict)
    connect_seconds: float = 0.0
    reconnects: str = ""  # the watch view's attempts when it saw its VNC server go
    reconnected_canvas: dict[str, Any] = field(default_factory=dict)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _state_of(tab: Tab, key: str) -> str | None:
    found = tab.evaluate(f"document.querySelector('tr[data-key=\"{key}\"] td.state')?.textContent ?? null")
    return str(found) if found else None


def _until_state(tab: Tab, key: str, text: str, timeout: float = 90.0, run: Callable[[], bool] | None = None) -> str:
    def shown() -> str | None:
        if run is not None:
            run()  # fails at once when the run has ended
        found = _state_of(tab, key)
        return found if found == text else None

    return wait_for(shown, f"{key} shown as {text!r} on the live page", timeout)


def _until_connected(tab: Tab, what: str) -> float:
    """Until noVNC says connected; the failure says what the page's status line said last."""
    status = "document.body?.dataset.connected === '1' ? 'ok' : document.getElementById('connection')?.textContent"
    # noVNC's own progress (connection state, handshake step, the websocket's readyState) for a failure.
    progress = (
        "[document.getElementById('mode')?.textContent, window.osworldRfb ? [osworldRfb._rfbConnectionState,"
        " osworldRfb._rfbInitState, osworldRfb._sock?._websocket?.readyState].join('/') : 'no RFB yet',"
        " document.readyState, performance.getEntriesByType('resource').length + ' resources loaded'].join(' | ')"
    )
    said: list[str] = []

    def connected() -> bool:
        said.append(str(tab.evaluate(status)))
        return said[-1] == "ok"

    started = time.monotonic()
    while not connected():
        if time.monotonic() > started + 120:  # seconds at an ordinary load; far longer on two busy cores
            pytest.fail(
                f"{what} did not connect within 120 s; its status line said {said[-1]!r} ({tab.evaluate(progress)}); "
                f"unfinished requests: {tab.unfinished_requests()}; errors: {tab.errors()}",
                pytrace=False,
            )
        time.sleep(0.2)
    return time.monotonic() - started


def _api(url: str) -> dict[str, dict[str, Any]]:
    tasks = httpx.get(url + "api/state", trust_env=False, timeout=5).json()["tasks"]
    return {t["key"]: t for t in tasks}


def _log(engine: docker.DockerClient, sandbox: str) -> str:
    result = engine.containers.get(sandbox).exec_run(["cat", "/tmp/keys.txt"])
    return str(result.output.decode(errors="replace")) if result.exit_code == 0 else ""


def _log_with(engine: docker.DockerClient, sandbox: str, text: str) -> str | None:
    log = _log(engine, sandbox)
    return log if text in log else None


def _watch(
    seen: Seen, gate: Gate, chromium: Chromium, url: str, engine: docker.DockerClient, run: Callable[[], bool]
) -> None:
    page = chromium.open(url)
    # The first step waits for the run's start: on a fresh machine that includes the desktop image's build.
    seen.states.append(_until_state(page, WATCHED, "step 1 of 5", IMAGE_BUILD_S, run))
    seen.first_page = page.evaluate("({rows: document.querySelectorAll('#tasks tbody tr').length})")
    gate.give(WATCHED, LOGGER)
    seen.states.append(_until_state(page, WATCHED, "step 2 of 5"))
    seen.shots["live"] = page.screenshot(seen.folder / "live-page.png")
    link = wait_for(
        lambda: page.evaluate(f"document.querySelector('tr[data-key=\"{WATCHED}\"] a.watch-link')?.href ?? null"),
        "the watch link",
    )
    watch = chromium.open(str(link))
    seen.connect_seconds = _until_connected(watch, "the watch view")
    seen.canvas_before = wait_for(
        lambda: (c := watch.evaluate(CANVAS)) and c["colors"] > 1 and c, "the desktop in the canvas"
    )
    seen.shots["watch"] = watch.screenshot(seen.folder / "watch-page.png")
    sandbox = _api(url)[WATCHED]["sandbox"]
    # The desktop's VNC server killed (it is supervised and comes back): the view connects again by itself.
    engine.containers.get(sandbox).exec_run(["pkill", "-x", "x11vnc"])
    seen.reconnects = wait_for(
        lambda: watch.evaluate("document.body.dataset.reconnects ?? null"), "the view to lose its VNC server"
    )
    _until_connected(watch, "the watch view after its VNC server restarted")
    seen.reconnected_canvas = wait_for(
        lambda: (c := watch.evaluate(CANVAS)) and c["colors"] > 1 and c, "the desktop again"
    )
    wait_for(lambda: "Outer window" in _log(engine, sandbox), "the event logger on the watched desktop")
    # A read-only view: the page itself would send nothing, so it is made to, as a tampered page would.
    watch.evaluate("osworldRfb.viewOnly = false; osworldRfb.focus(); true")
    watch.key("q", "KeyQ", 81)
    box = watch.evaluate(
        "(() => { const r = document.querySelector('#screen canvas').getBoundingClientRect();"
        " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"
    )
    watch.click(box["x"], box["y"])
    # Waited for, not required: a bridge that let them through fails the read-only test alone.
    seen.dropped = poll_until(lambda: int(_api(url)[WATCHED]["input_dropped"]), lambda n: n >= 4, timeout=15)
    seen.watched_log = _log(engine, sandbox)
    gate.give(WATCHED, CLOSE_LOGGER)
    seen.canvas_after = wait_for(
        lambda: (c := watch.evaluate(CANVAS)) and c["hash"] != seen.canvas_before["hash"] and c, "the screen's change"
    )
    seen.shots["watch_after"] = watch.screenshot(seen.folder / "watch-page-after.png")
    gate.give(WATCHED, "DONE")


def _touch(seen: Seen, gate: Gate, chromium: Chromium, url: str, engine: docker.DockerClient) -> None:
    wait_for(lambda: (t := _api(url)[TOUCHED])["state"] == "step" and t["step"] == 2, "the touched task at step 2")
    sandbox = _api(url)[TOUCHED]["sandbox"]
    wait_for(lambda: "Outer window" in _log(engine, sandbox), "the event logger on the touched desktop")
    control = chromium.open(f"{url}watch?task={quote(TOUCHED, safe='')}&control=1")
    _until_connected(control, "the view in control")
    control.evaluate("osworldRfb.focus(); true")
    control.key("w", "KeyW", 87)
    seen.touched_log = wait_for(lambda: _log_with(engine, sandbox, "keysym 0x77, w"), "the key on the desktop")
    seen.touched_at = wait_for(lambda: _api(url)[TOUCHED]["touched_at"], "the task marked touched")
    seen.shots["control"] = control.screenshot(seen.folder / "watch-page-control.png")
    gate.give(TOUCHED, "DONE")


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Seen:
    folder = tmp_path_factory.mktemp("live-run")
    seen = Seen(folder=folder)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    run_id = f"live-{os.getpid()}-{time.time_ns() % 10**8}"
    reports = folder / "reports"
    started = time.monotonic()
    with ModelServer(models=["scripted"]) as server:
        gate = Gate(server)
        gate.give(TOUCHED, LOGGER)
        env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV} | {"PY_COLORS": "0"}
        args = [sys.executable, "-m", "pytest", str(BUNDLED), "-p", "no:cacheprovider", "-v", "-n", "2"]
        args += ["-k", f"{WATCHED.split('/')[1]} or {TOUCHED.split('/')[1]}", f"--basetemp={folder / 'basetemp'}"]
        args += ["--osworld-report-dir", str(reports), "--osworld-run-id", run_id, "--osworld-max-steps", "5"]
        args += server.agent_args()
        args += ["--osworld-live", str(port), "--osworld-live-input"]
        output = (folder / "run.log").open("w")
        process = subprocess.Popen(args, cwd=folder, env=env, stdout=output, stderr=subprocess.STDOUT, text=True)
        chromium = Chromium(folder)
        engine = docker.from_env()
        try:
            wait_for(
                lambda: (process.poll() is None and _reachable(url)) or _ended(process, folder), "the live page", 120
            )
            _watch(seen, gate, chromium, url, engine, lambda: _ended(process, folder))
            _touch(seen, gate, chromium, url, engine)
            page = chromium.tabs[0]
            process.wait(timeout=120)
            wait_for(lambda: page.evaluate("document.body.dataset.ended === '1'"), "the page to see the end")
            seen.final_rows = {key: _state_of(page, key) or "" for key in (WATCHED, TOUCHED)}
            seen.final_figures = str(page.evaluate("document.querySelector('#figures').innerText"))
            seen.shots["final"] = page.screenshot(folder / "live-page-final.png")
        finally:
            gate.close()
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
            output.close()
            chromium.close()
            engine.close()
        seen.seconds = time.monotonic() - started
        lines = (folder / "run.log").read_text().splitlines()
        seen.run = Run(result=pytest.RunResult(process.returncode, lines, [], seen.seconds), run_dir=reports / run_id)
    return seen


def _reachable(url: str) -> bool:
    try:
        return httpx.get(url + "api/state", trust_env=False, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _ended(process: subprocess.Popen[str], folder: Path) -> bool:
    if process.poll() is not None:
        pytest.fail(f"the run ended early: {(folder / 'run.log').read_text()[-4000:]}", pytrace=False)
    return False


def _png(path: Path) -> bool:
    return path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 2000


def test_the_live_page_shows_a_running_tasks_state_and_its_step_change(seen: Seen) -> None:
    assert seen.states == ["step 1 of 5", "step 2 of 5"]
    assert seen.first_page == {"rows": 2}
    assert _png(seen.shots["live"]), seen.folder


def test_the_watch_link_shows_the_desktop_and_its_change_in_the_novnc_canvas(seen: Seen) -> None:
    before, after = seen.canvas_before, seen.canvas_after
    assert (before["width"], before["height"]) == (1920, 1080) and before["colors"] > 1
    assert after["hash"] != before["hash"]
    assert _png(seen.shots["watch"]) and _png(seen.shots["watch_after"]), seen.folder


def test_the_watch_view_connects_again_when_the_desktops_vnc_server_restarts(seen: Seen) -> None:
    assert seen.reconnects == "1", seen.folder  # the first connection's end was seen, then a new one made
    assert seen.reconnected_canvas["colors"] > 1, seen.reconnected_canvas


def test_a_read_only_view_keeps_the_browsers_keys_and_clicks_from_the_desktop(seen: Seen) -> None:
    assert seen.dropped >= 4  # a key down and up, a press and a release at least
    assert "Outer window" in seen.watched_log  # the logger ran, and saw nothing of them
    assert "KeyPress" not in seen.watched_log and "ButtonPress" not in seen.watched_log, seen.watched_log
    assert seen.run is not None
    watched = seen.run.record(WATCHED)
    assert watched["termination"] == "done" and watched["score"] == 0.0 and watched.get("human_input") is None


def test_with_input_allowed_a_key_lands_and_the_task_is_masked_human_interference(seen: Seen) -> None:
    assert "keysym 0x77, w" in seen.touched_log
    assert seen.run is not None
    touched = seen.run.record(TOUCHED)
    assert (touched["termination"], touched["score"]) == ("human_interference", None), touched["message"]
    assert touched["human_input"]["first_at"] == seen.touched_at and touched["human_input"]["messages"] >= 2
    assert touched["message"].startswith("a person sent") and "the episode had ended done" in touched["message"]
    seen.run.result.stdout.fnmatch_lines(["*MASKED*os-rename-report*human_interference*"])
    assert seen.run.summary()["masks"] == {"human_interference": 1}


def test_the_page_shows_each_outcome_and_the_rates_when_the_run_ends(seen: Seen) -> None:
    assert seen.final_rows == {WATCHED: "failed (score 0)", TOUCHED: "masked (human_interference)"}
    assert "0.0% (0/2)" in seen.final_figures, seen.final_figures  # the all view: a mask counts as 0
    assert _png(seen.shots["final"]), seen.folder
    print(
        f"the live run took {seen.seconds:.1f} s, the watch view connected in {seen.connect_seconds:.1f} s; "
        f"pages saved in {seen.folder}: {json.dumps(sorted(seen.shots))}"
    )
