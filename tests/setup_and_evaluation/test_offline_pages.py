"""chrome_open_tabs on pages the guest cannot load: a setup error naming the URL, never a silent start.

Upstream notes a failed ``page.goto`` and goes on; then a task whose site is unreachable starts from a
browser that never visited it, and doing nothing can score (test_small's cookie task: cookies that were
never set are "deleted"). Here each way a page cannot load fails the step, and a slow page does not.
Real desktop containers, real servers on the host that the guest's browser reaches over the bridge.
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.guest.devtools import DevTools
from pytest_osworld.setup import steps as setup_steps
from pytest_osworld.setup.errors import SetupError
from pytest_osworld.setup.steps import run_setup
from tests.setup_and_evaluation.steps import START_CHROME, steps
from tests.support.desktop import Desktop, bridge_gateway, desktop
from tests.support.desktop_fixtures import make_context

pytestmark = pytest.mark.docker

SHORT_LOAD_S = 6.0  # the tab load limit in these tests (60 s in a real run)
SLOW_ANSWER_S = 2.0  # a page that answers late, but well within the limit
HANGING_IMAGE_S = 20.0  # a subresource that outlasts the limit: the load event comes late


def _page(title: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body><p>{title}</p></body></html>".encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    """``/ok``, ``/slow``, ``/late-load`` (its image hangs), ``/503``, ``/503-empty``, ``/404``."""

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, content_type: str = "text/html") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the browser may have given up on a slow answer
            self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/slow":
            time.sleep(SLOW_ANSWER_S)  # a slow server, still answering in time
            self._send(200, _page("Slow but fine"))
        elif path == "/late-load":
            self._send(200, b"<html><head><title>Late load</title></head><body><img src='/hang.png'></body></html>")
        elif path == "/hang.png":
            time.sleep(HANGING_IMAGE_S)  # a subresource that keeps the load event back
            self._send(200, b"", "image/png")
        elif path == "/503":
            self._send(503, _page("Service Unavailable"))
        elif path == "/503-empty":
            self._send(503, b"")
        elif path == "/404":
            self._send(404, _page("Not Found"))
        else:
            self._send(200, _page("Fine"))


@dataclass
class Sites:
    """Where the guest's browser finds each kind of page."""

    base: str  # the server above
    refused: str  # a port nothing listens on
    silent: str  # a port that accepts connections and never answers

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


@contextlib.contextmanager
def _sites(host: str) -> Iterator[Sites]:
    server = http.server.ThreadingHTTPServer((host, 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with socket.socket() as closed:
        closed.bind((host, 0))
        refused_port = closed.getsockname()[1]  # closed again at once: connections are refused
    silent = socket.socket()
    silent.bind((host, 0))
    silent.listen(16)  # never accepted: the kernel completes the handshake, no answer ever comes
    try:
        yield Sites(
            base=f"http://{host}:{server.server_address[1]}",
            refused=f"http://{host}:{refused_port}/",
            silent=f"http://{host}:{silent.getsockname()[1]}/",
        )
    finally:
        silent.close()
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser_desktop(engine: Any, desktop_ref: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desktop]:
    """One desktop whose Chrome answers DevTools: each test opens its own tabs in it."""
    with desktop(engine, desktop_ref) as made:
        ctx = make_context(made, tmp_path_factory.mktemp("start"))
        run_setup(ctx, steps(*START_CHROME))
        DevTools(ctx.devtools_url).wait_available()
        yield made


@pytest.fixture(scope="module")
def sites(browser_desktop: Desktop) -> Iterator[Sites]:
    with _sites(bridge_gateway(browser_desktop)) as found:
        yield found


@pytest.fixture(autouse=True)
def _short_load_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setup_steps, "TAB_LOAD_S", SHORT_LOAD_S)


def open_tabs(made: Desktop, tmp_path: Path, *urls: str) -> Any:
    ctx = make_context(made, tmp_path)
    run_setup(ctx, steps({"type": "chrome_open_tabs", "parameters": {"urls_to_open": list(urls)}}))
    return ctx


UNLOADABLE = {
    "dns": ("http://osworld-no-such-host.invalid/", "net::ERR_NAME_NOT_RESOLVED"),
    "refused": ("refused", "net::ERR_CONNECTION_REFUSED"),
    "5xx": ("/503", "HTTP 503"),
    "5xx-empty": ("/503-empty", "net::ERR_HTTP_RESPONSE_CODE_FAILURE"),
    "no-answer": ("silent", f"no response within {SHORT_LOAD_S:g} s"),
}


def _resolve(sites: Sites, where: str) -> str:
    if where == "refused":
        return sites.refused
    if where == "silent":
        return sites.silent
    return sites.url(where) if where.startswith("/") else where


@pytest.mark.parametrize("kind", sorted(UNLOADABLE))
def test_a_page_the_guest_cannot_load_is_a_setup_error_naming_it(
    browser_desktop: Desktop, sites: Sites, tmp_path: Path, kind: str
) -> None:
    where, cause = UNLOADABLE[kind]
    bad = _resolve(sites, where)
    good = sites.url("/ok")
    with pytest.raises(SetupError) as info:
        open_tabs(browser_desktop, tmp_path, good, bad)
    error = info.value
    assert not error.score_zero  # masked as setup_error, never scored
    assert (error.phase, error.step_index, error.step_type) == ("config", 0, "chrome_open_tabs")
    assert f"cannot load {bad}" in error.message and cause in error.message, error.message
    assert "not needs_network" in error.message  # the fix: where the site is live, or select it away


def test_the_step_record_says_which_page_failed(browser_desktop: Desktop, sites: Sites, tmp_path: Path) -> None:
    ctx = make_context(browser_desktop, tmp_path)
    with pytest.raises(SetupError):
        run_setup(ctx, steps({"type": "chrome_open_tabs", "parameters": {"urls_to_open": [sites.url("/503")]}}))
    (record,) = ctx.steps
    assert not record.ok and sites.url("/503") in record.note and "HTTP 503" in record.note


def test_slow_pages_that_load_are_fine(browser_desktop: Desktop, sites: Sites, tmp_path: Path) -> None:
    slow, late, not_found = sites.url("/slow"), sites.url("/late-load"), sites.url("/404")
    ctx = open_tabs(browser_desktop, tmp_path, slow, late, not_found)
    (record,) = ctx.steps
    assert record.ok
    # The late load event is noted, not fatal: the page's own response arrived in time.
    assert f"{late}: did not finish loading within {SHORT_LOAD_S:g} s" in record.note
    assert slow not in record.note and not_found not in record.note  # a 4xx page with a body loaded
    with DevTools(ctx.devtools_url) as devtools:
        titles = {p.get("url"): p.get("title") for p in devtools.pages()}
    assert titles[slow] == "Slow but fine" and titles[not_found] == "Not Found"


def test_a_page_whose_server_starts_late_is_waited_for(browser_desktop: Desktop, tmp_path: Path) -> None:
    """A server an earlier step launched may not listen yet: its refusals are tried again a few seconds."""
    host = bridge_gateway(browser_desktop)
    with socket.socket() as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    late: list[http.server.ThreadingHTTPServer] = []

    def start_later() -> None:
        time.sleep(2.0)  # the step's first navigations are refused
        server = http.server.ThreadingHTTPServer((host, port), _Handler)
        late.append(server)
        server.serve_forever()

    threading.Thread(target=start_later, daemon=True).start()
    url = f"http://{host}:{port}/ok"
    try:
        ctx = open_tabs(browser_desktop, tmp_path, url)
    finally:
        deadline = time.monotonic() + 10
        while not late and time.monotonic() < deadline:
            time.sleep(0.1)  # wait for the server thread before shutting it down
        for server in late:
            server.shutdown()
            server.server_close()
    (record,) = ctx.steps
    assert record.ok and url not in record.note
