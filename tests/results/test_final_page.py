"""The run's final state as a static page (``live.html``), and a report page's link to the last screenshot,
from run folders written through the real store (no engine)."""

from __future__ import annotations

import base64
import io
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from PIL import Image

from pytest_osworld.record import StepRecord, Termination
from pytest_osworld.results.final_page import FINAL_PAGE, THUMBNAIL_WIDTH, write_final_page
from pytest_osworld.results.store import RunStore
from pytest_osworld.results.summary import summarize_run
from pytest_osworld.results.task_page import last_screenshot, links
from pytest_osworld.results.views import ANSWER_CHARS  # the final page cuts answers as the live page does
from tests.results.helpers import PNG, record, write_run

LONG_ANSWER = "pyautogui.click(10, 20)  " * 40


def png(width: int, height: int, colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def rgb(image: Image.Image) -> tuple[int, int, int]:
    red, green, blue = image.convert("RGB").getpixel((100, 100))  # type: ignore[misc]
    return int(red), int(green), int(blue)


class Tags(HTMLParser):
    """Every tag with its attributes, and the text of each table row."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append(" ".join(" ".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def make_run(run_dir: Path) -> RunStore:
    """Four tasks that ended each way, and one selected that never ran."""
    passed = record("os/pass", 1.0, usage=(1000, 50, 0.25), total=12.5)
    passed.worker, passed.steps = "gw0", 2
    passed.sandbox = {"name": "pytest-osworld-r-gw0-1-aa00"}
    failed = record("os/fail", 0.0, Termination.MAX_STEPS, usage=(500, 20, 0.125))
    failed.sandbox = {
        "name": "pytest-osworld-r-gw1-1-bb00",
        "kept": {"name": "x--kept-failed-score-0", "why": "failed with score 0"},
    }
    masked = record("chrome/mask", None, Termination.SANDBOX_LOST, message="sandbox gone")
    skipped = record("os/skip", None, Termination.UNSUPPORTED, message="needs Google credentials")
    write_run(
        run_dir,
        [passed, failed, masked, skipped],
        selected=["os/pass", "os/fail", "chrome/mask", "os/skip", "os/never"],
    )
    store = RunStore(run_dir, keep_video=True)
    store.write_step(
        "os/pass",
        StepRecord(step_num=1, action_timestamp="t", action="x", response="first answer"),
        png(64, 40, (0, 0, 255)),
    )
    store.write_step("os/pass", StepRecord(step_num=2, action_timestamp="t", action="DONE", response=LONG_ANSWER))
    store.write_final_screenshot("os/pass", png(1280, 800, (255, 0, 0)))
    for n in (1, 2):
        store.write_step(
            "os/fail",
            StepRecord(step_num=n, action_timestamp="t", action="x", response=f"answer {n}"),
            png(640, 400, (0, n * 100, 0)),
        )
    failed.artifacts["recording"] = store.write_video("os/fail", b"\x00\x00\x00\x18ftypmp42")
    for r in (passed, failed):
        store.write_result(r)
    return store


def test_the_final_page_holds_the_runs_last_state(tmp_path: Path) -> None:
    run_dir = tmp_path / "run-7"
    store = make_run(run_dir)
    path = write_final_page(run_dir, summarize_run(run_dir))
    assert path == run_dir / FINAL_PAGE
    text = path.read_text(encoding="utf-8")
    page = Tags()
    page.feed(text)

    # Self-contained: nothing is loaded from elsewhere; every link is a file of the run folder.
    for tag, attrs in page.tags:
        for name in ("src", "href"):
            value = attrs.get(name)
            if value is None:
                continue
            assert not re.match(r"^[a-z]+://|^//", value), (tag, value)
            if not value.startswith("data:"):
                assert (run_dir / unquote(value)).is_file(), value
    assert not any(tag in ("script", "link", "iframe") for tag, _ in page.tags)

    rows = {row[0]: row for row in page.rows if row and "/" in row[0]}
    assert set(rows) == {"os/pass", "os/fail", "chrome/mask", "os/skip", "os/never"}
    assert rows["os/pass"][1] == "passed: score 1"
    assert rows["os/fail"][1] == "failed: score 0 sandbox kept for a look (failed with score 0)"
    assert rows["chrome/mask"][1] == "masked: sandbox_lost"
    assert rows["os/skip"][1] == "skipped: needs Google credentials"
    assert rows["os/never"][1] == "not run"
    assert rows["os/pass"][2:5] == ["2", "gw0 / pytest-osworld-r-gw0-1-aa00", "12.5 s"]
    # The model's last answer, truncated; the last screenshot of a task without a final one is its last step's.
    answer = rows["os/pass"][5]
    assert answer.startswith("pyautogui.click(10, 20)") and len(answer) == ANSWER_CHARS and answer.endswith("…")
    assert rows["os/fail"][5] == "answer 2"

    # The figures: counts, both rates with their denominators, the masks, the cost.
    figures = {row[0]: row[1] for row in page.rows if len(row) == 2}
    assert figures["selected"] == "5" and figures["passed"] == "1" and figures["failed"] == "1"
    assert figures["masked"] == "1" and figures["skipped"] == "1" and figures["not run"] == "1"
    assert figures["sandbox_lost"] == "1"
    all_view = next(row for row in page.rows if row[0] == "all")
    assert all_view == ["all", "1/3", "33.3%", "1/3", "33.3%"]
    assert "agent: 1500 prompt + 70 completion tokens, cost 0.375" in text

    # Last screenshots: a small copy embedded, a link to the file.
    links_by_task = {
        key: [a["href"] for tag, a in page.tags if tag == "a" and a.get("href", "") and key in unquote(a["href"] or "")]
        for key in ("os/pass", "os/fail")
    }
    assert links_by_task["os/pass"] == ["os/pass/final.png"]
    assert links_by_task["os/fail"] == ["os/fail/step_2.png", "os/fail/recording.mp4"]
    thumbnails = [a["src"] for tag, a in page.tags if tag == "img"]
    assert len(thumbnails) == 2
    # In the rows' order (os/fail, then os/pass): the green last step, then the red final screen (not the blue step).
    fail_thumb, pass_thumb = (Image.open(io.BytesIO(base64.b64decode((t or "").split(",", 1)[1]))) for t in thumbnails)
    assert fail_thumb.format == pass_thumb.format == "JPEG"
    assert fail_thumb.size == (THUMBNAIL_WIDTH, 200) and pass_thumb.size == (THUMBNAIL_WIDTH, 200)
    assert rgb(fail_thumb) == pytest.approx((0, 200, 0), abs=20)
    assert rgb(pass_thumb) == pytest.approx((255, 0, 0), abs=20)
    assert store.path_of("os/pass").is_dir()


def test_a_repeats_files_are_linked_with_their_hash_escaped(tmp_path: Path) -> None:
    run_dir = tmp_path / "run-8"
    write_run(run_dir, [record("os/a#r2", 0.0)], repeat=2)
    RunStore(run_dir).write_final_screenshot("os/a#r2", png(32, 20, (9, 9, 9)))
    text = write_final_page(run_dir, summarize_run(run_dir)).read_text()
    assert 'href="os/a%23r2/final.png"' in text


def test_the_report_links_the_last_screenshot(tmp_path: Path) -> None:
    store = make_run(tmp_path / "run-9")
    results = store.load_results()
    fail_dir, pass_dir = store.path_of("os/fail"), store.path_of("os/pass")
    assert last_screenshot(pass_dir, results["os/pass"]) == pass_dir / "final.png"
    assert last_screenshot(fail_dir, results["os/fail"]) == fail_dir / "step_2.png"
    assert last_screenshot(store.path_of("chrome/mask"), results["chrome/mask"]) is None
    found = dict(links(store.run_dir, fail_dir, results["os/fail"]))
    assert found["last screenshot"] == (fail_dir / "step_2.png").resolve().as_uri()
    assert found["video"] == (fail_dir / "recording.mp4").resolve().as_uri()
    assert "last screenshot" not in dict(links(store.run_dir, store.path_of("chrome/mask"), results["chrome/mask"]))


def test_a_broken_screenshot_is_linked_without_a_thumbnail(tmp_path: Path) -> None:
    run_dir = tmp_path / "run-10"
    write_run(run_dir, [record("os/a", 0.0)])
    RunStore(run_dir).write_final_screenshot("os/a", PNG)  # a 1x1 PNG Pillow refuses (SyntaxError)
    text = write_final_page(run_dir, summarize_run(run_dir)).read_text()
    assert '<a href="os/a/final.png">last screenshot</a>' in text and "<img" not in text
