"""Getter paths where an agent's outcome must score as OSWorld scores it, never become a mask.

Upstream's getters read any error answer of the guest as "no value" and its metrics then score 0;
a tab the accessibility tree does not show has no URL, whatever the browser holds. Real desktop
containers where the desktop can produce the outcome; where it cannot (the guest failing to read
its terminal or its tree), a real HTTP server answering as upstream's guest does.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.errors import EvaluatorError
from pytest_osworld.evaluation.evaluate import evaluate
from pytest_osworld.evaluation.getters import get_getter
from pytest_osworld.guest.client import GuestClient, GuestRequestError
from pytest_osworld.guest.devtools import DevTools
from pytest_osworld.settings import Settings
from pytest_osworld.setup.assets import AssetCache
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.setup.steps import run_setup
from pytest_osworld.tasks.model import Task
from tests.setup_and_evaluation.steps import steps
from tests.support.desktop import Desktop, FileServer, bridge_gateway, desktop, file_server
from tests.support.desktop_fixtures import make_context
from tests.support.loopback import loopback_http
from tests.support.taskfactory import task as make_task

MISSING_PROGRAM = ["no-such-program-for-parity"]


def call(ctx: TaskContext, type_: str, **config: Any) -> Any:
    return get_getter(type_)(ctx, {"type": type_, **config})


def task(evaluator: dict[str, Any]) -> Task:
    return Task.model_validate(make_task(f"parity-{time.monotonic_ns()}", evaluator=evaluator))


# --- commands ----------------------------------------------------------------------------------


@pytest.mark.docker
def test_a_command_the_guest_cannot_run_scores_zero(shared_desktop: Desktop, tmp_path: Path) -> None:
    """Upstream's guest answers 500 for a program it cannot start; its getter returns None and
    check_include_exclude / exact_match score 0. The project used to mask the task."""
    ctx = make_context(shared_desktop, tmp_path)
    assert call(ctx, "vm_command_line", command=MISSING_PROGRAM) is None
    assert call(ctx, "vm_command_error", command=MISSING_PROGRAM) is None
    for evaluator in (
        {
            "func": "check_include_exclude",
            "result": {"type": "vm_command_line", "command": MISSING_PROGRAM},
            "expected": {"type": "rule", "rules": {"include": [], "exclude": ["error"]}},
        },
        {
            "func": "check_include_exclude",
            "result": {"type": "vm_command_error", "command": MISSING_PROGRAM},
            "expected": {"type": "rule", "rules": {"include": [], "exclude": ["x"]}},
        },
        {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": MISSING_PROGRAM},
            "expected": {"type": "rule", "rules": {"expected": ""}},
        },
    ):
        evaluation = evaluate(ctx, task(evaluator), "DONE")
        assert evaluation.score == 0.0 and evaluation.metric_scores == [0.0], evaluation
    # A command that runs is unchanged: its output, whatever its exit status.
    assert call(ctx, "vm_command_line", command="echo out; exit 3", shell=True) == "out\n"


@pytest.mark.docker
def test_a_command_past_the_guests_time_limit_scores_zero(engine: Any, desktop_ref: str, tmp_path: Path) -> None:
    """The guest kills a command at its time limit and answers 500 (upstream too): no value, 0."""
    with desktop(engine, desktop_ref, env={"GUEST_EXECUTE_TIMEOUT_S": "1"}) as made:
        ctx = make_context(made, tmp_path)
        assert call(ctx, "vm_command_line", command="echo started; sleep 10", shell=True) is None
        evaluation = evaluate(
            ctx,
            task(
                {
                    "func": "check_include_exclude",
                    "result": {"type": "vm_command_line", "command": "echo started; sleep 10", "shell": True},
                    "expected": {"type": "rule", "rules": {"include": [], "exclude": ["failed"]}},
                }
            ),
            "DONE",
        )
        assert evaluation.score == 0.0 and evaluation.metric_scores == [0.0]


# --- a guest that answers errors for its terminal, its tree, its commands ------------------------


@contextlib.contextmanager
def erring_guest(answers: dict[str, int]) -> Iterator[str]:
    """A real HTTP server answering each path with its status and upstream's error body."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            status = answers.get(self.path, 404)
            body = json.dumps({"status": "error", "message": f"{self.path} failed"}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

    with loopback_http(Handler) as url:
        yield url


def erring_context(url: str, tmp: Path) -> TaskContext:
    settings = Settings(asset_cache=tmp / "assets")
    return TaskContext(
        guest=GuestClient(url, retry_budget=0.0),
        url=lambda port: url,
        settings=settings,
        assets=AssetCache.from_settings(settings),
        cache_dir=tmp / "cache",
    )


def test_guest_error_answers_read_as_no_value(tmp_path: Path) -> None:
    """500 (upstream's answer when reading the terminal, the tree or running a command fails) is no
    value, as upstream's controller and getters read it; the task scores 0."""
    answers = {"/terminal": 500, "/accessibility": 500, "/execute": 500}
    with erring_guest(answers) as url:
        ctx = erring_context(url, tmp_path)
        assert call(ctx, "vm_terminal_output") is None
        assert call(ctx, "vm_command_line", command=["true"]) is None
        assert call(ctx, "active_url_from_accessTree") is None
        assert call(ctx, "active_tab_url_parse", parse_keys=["q"]) is None
        # Upstream asks xdg-mime through vm_command_line: failed queries are skipped.
        assert call(ctx, "default_video_player") == "unknown"
        evaluation = evaluate(
            ctx,
            task(
                {
                    "func": "check_include_exclude",
                    "result": {"type": "vm_terminal_output"},
                    "expected": {"type": "rule", "rules": {"include": [], "exclude": ["x"]}},
                }
            ),
            "DONE",
        )
        assert evaluation.score == 0.0
        answers["/execute"] = 400  # the project's guest: no such program
        assert call(ctx, "vm_command_error", command=["nothing"]) is None


@pytest.mark.parametrize("status", [501, 502, 503])
def test_sandbox_error_answers_stay_errors(tmp_path: Path, status: int) -> None:
    """A guest without the feature (501) or a gateway without a guest behind it is the sandbox's
    failure, not the agent's outcome: still a mask."""
    with erring_guest({"/terminal": status, "/accessibility": status, "/execute": status}) as url:
        ctx = erring_context(url, tmp_path)
        for getter, config in (
            ("vm_terminal_output", {}),
            ("vm_command_line", {"command": ["true"]}),
            ("active_url_from_accessTree", {}),
        ):
            with pytest.raises(GuestRequestError):
                call(ctx, getter, **config)
        with pytest.raises(EvaluatorError, match=str(status)):
            evaluate(
                ctx,
                task(
                    {
                        "func": "check_include_exclude",
                        "result": {"type": "vm_terminal_output"},
                        "expected": {"type": "rule", "rules": {"include": [], "exclude": ["x"]}},
                    }
                ),
                "DONE",
            )


# --- the active tab's URL: the address bar, and nothing else ----------------------------------------

START_CHROME = (
    {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
    {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}},
)


@pytest.fixture
def page_site(tmp_path: Path, fresh_desktop: Desktop) -> Iterator[FileServer]:
    root = tmp_path / "site"
    root.mkdir()
    (root / "target.html").write_text("<html><head><title>Target</title></head><body>target</body></html>")
    with file_server(root, bridge_gateway(fresh_desktop)) as server:
        yield server


@pytest.mark.docker
def test_an_empty_address_bar_gives_no_url_whatever_the_tab_holds(
    fresh_desktop: Desktop, page_site: FileServer, tmp_path: Path
) -> None:
    """Upstream reads the URL from the address bar alone: a bar without text (the agent cleared it)
    gives None and the metric 0. The project used to ask DevTools instead, which still had the page
    loaded, and scored 1."""
    ctx = make_context(fresh_desktop, tmp_path)
    url = page_site.url("target.html")
    run_setup(ctx, steps(*START_CHROME, {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [url]}}))
    evaluator = {
        "func": "is_expected_active_tab",
        "result": {"type": "active_url_from_accessTree", "goto_prefix": "http://"},
        "expected": {"type": "rule", "rules": {"type": "url", "url": url}},
    }
    assert call(ctx, "active_url_from_accessTree", goto_prefix="http://") == url
    assert evaluate(ctx, task(evaluator), "DONE").score == 1.0

    ctx.guest.run_pyautogui("pyautogui.hotkey('ctrl', 'l'); pyautogui.press('backspace')")
    deadline = time.monotonic() + 30
    while call(ctx, "active_url_from_accessTree", goto_prefix="http://") is not None:
        assert time.monotonic() < deadline, "the getter still gives a URL for the cleared address bar"
        time.sleep(0.5)  # poll the tree until the cleared bar shows
    with DevTools(ctx.devtools_url) as devtools:
        assert url in [page.get("url") for page in devtools.pages()]  # the page is still open
    assert evaluate(ctx, task(evaluator), "DONE").score == 0.0
    assert call(ctx, "active_tab_info", goto_prefix="http://") is None
    assert call(ctx, "active_tab_url_parse", goto_prefix="http://", parse_keys=["q"]) is None
    assert call(ctx, "url_dashPart", goto_prefix="http://", partIndex=3, returnType="string") is None
    assert call(ctx, "active_tab_html_parse", goto_prefix="http://", category="class") is None


@pytest.mark.docker
def test_differs_a_failed_command_scores_zero_where_upstreams_metric_crashes_on_none(
    shared_desktop: Desktop, tmp_path: Path
) -> None:
    """Differs: upstream calls the metric with None, and is_extension_installed (``x in None``),
    is_utc_0 and check_gnome_favorite_apps raise on it, so upstream records no score at all. The
    project scores a missing result 0 without calling the metric, as for any missing result."""
    ctx = make_context(shared_desktop, tmp_path)
    for func, rules in (
        ("is_extension_installed", {"type": "not_contain", "expected": "ms-python.python"}),
        ("check_gnome_favorite_apps", {"expected": ["firefox.desktop"]}),
    ):
        evaluation = evaluate(
            ctx,
            task(
                {
                    "func": func,
                    "result": {"type": "vm_command_line", "command": MISSING_PROGRAM},
                    "expected": {"type": "rule", "rules": rules},
                }
            ),
            "DONE",
        )
        assert evaluation.score == 0.0 and "no result" in evaluation.message
    utc = evaluate(
        ctx, task({"func": "is_utc_0", "result": {"type": "vm_command_line", "command": MISSING_PROGRAM}}), "DONE"
    )
    assert utc.score == 0.0
