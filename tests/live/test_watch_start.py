"""The watch page in headless Chromium when its viewer cannot start: it loads itself again, twice, then
says so in its status line; a viewer that starts is left alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_osworld.live.channel import Channel
from pytest_osworld.live.server import LiveServer
from pytest_osworld.live.state import LiveState
from pytest_osworld.settings.address import LiveAddress
from tests.support.browser import Chromium
from tests.support.polling import wait_for

# A stand-in for noVNC's RFB class: enough for watch.js to construct and drive it.
WORKING_RFB = "export default class RFB extends EventTarget { disconnect() {} focus() {} }\n"
# One of its modules imports a file that does not exist: the module graph never runs.
BROKEN_RFB = 'import "./missing.js";\n' + WORKING_RFB


def _novnc(folder: Path, source: str) -> Path:
    (folder / "core").mkdir(parents=True)
    (folder / "core" / "rfb.js").write_text(source)
    return folder


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Chromium]:
    browser = Chromium(tmp_path)
    try:
        yield browser
    finally:
        browser.close()


def _serve(tmp_path: Path, source: str) -> LiveServer:
    channel = Channel(tmp_path / "channel").make()
    return LiveServer(
        LiveAddress("127.0.0.1", 0), LiveState(run_id="r"), channel, novnc=_novnc(tmp_path / "novnc", source)
    ).start()


def test_a_watch_view_whose_viewer_never_starts_loads_again_twice_then_says_so(
    tmp_path: Path, chromium: Chromium
) -> None:
    server = _serve(tmp_path, BROKEN_RFB)
    try:
        tab = chromium.open(server.url + "watch?task=os%2Fa")
        wait_for(lambda: tab.evaluate("document.body?.dataset.stalled === '1'"), "the page to give up", 120)
        assert tab.evaluate("document.getElementById('connection').textContent") == (
            "the viewer did not start: reload the page"
        )
        assert tab.evaluate("sessionStorage.getItem('osworld-watch-reloads')") == "2"
    finally:
        server.close()


def test_a_watch_view_whose_viewer_starts_is_not_loaded_again(tmp_path: Path, chromium: Chromium) -> None:
    server = _serve(tmp_path, WORKING_RFB)
    try:
        tab = chromium.open(server.url + "watch?task=os%2Fa")
        wait_for(lambda: tab.evaluate("window.osworldWatchStarted === true"), "the viewer to start", 60)
        assert tab.evaluate("sessionStorage.getItem('osworld-watch-reloads')") is None
        # Past the page's 20 s check: still the first load, never stalled.
        marker = tab.evaluate("window.firstLoad = 1")
        assert marker == 1
        wait_for(lambda: tab.evaluate("performance.now() > 22000") or None, "22 s on the page", 60)
        assert tab.evaluate("window.firstLoad ?? null") == 1
        assert tab.evaluate("document.body.dataset.stalled ?? null") is None
    finally:
        server.close()
