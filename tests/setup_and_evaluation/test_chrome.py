"""Chrome steps and getters against the real browser of a desktop container (DevTools on port 9222)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.evaluation.getters import get_getter
from pytest_osworld.guest.devtools import DevTools
from pytest_osworld.setup.assets import HISTORY_EMPTY_URL
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.setup.steps import run_setup
from tests.setup_and_evaluation.steps import START_CHROME, steps
from tests.support.desktop import Desktop, FileServer, bridge_gateway, file_server
from tests.support.desktop_fixtures import make_context
from tests.support.polling import wait_for

pytestmark = pytest.mark.docker

PAGES = {
    "one.html": "<html><head><title>Page One</title></head><body><p id='v'>first value</p></body></html>",
    "two.html": "<html><head><title>Page Two</title></head><body>"
    "<a id='go' href='three.html?x=1'>next</a><span class='p' data-k='attr-value'>two</span></body></html>",
    "three.html": "<html><head><title>Page Three</title></head><body><h1 id='h'>third heading</h1></body></html>",
    "form.html": "<html><head><title>Booking</title></head><body><div id='main'>"
    "<span class='loc'>  Boston Logan </span><span class='loc'>NYC</span>"
    "<div class='route'>SEA<div class='sep'></div>JFK</div>"
    "<div class='card'><h3>Card title</h3></div>"
    "<ul class='cats'><li class='catAllProducts'><span>Shoes</span></li>"
    "<li class='catAllProducts'><span>Hats</span></li></ul>"
    "<p>Pick-up   Location: <b>Terminal B</b></p>"
    "<form><input name='who' value='initial'></form></div></body></html>",
}


@pytest.fixture
def site(tmp_path: Path, fresh_desktop: Desktop) -> Iterator[FileServer]:
    """The test pages, served by the host to the guest's browser over the container's network."""
    root = tmp_path / "site"
    root.mkdir()
    for name, html in PAGES.items():
        (root / name).write_text(html)
    with file_server(root, bridge_gateway(fresh_desktop)) as server:
        yield server


def call(ctx: TaskContext, type_: str, **config: Any) -> Any:
    return get_getter(type_)(ctx, {"type": type_, **config})


def tabs(ctx: TaskContext) -> list[tuple[str, str]]:
    """Titles and URLs of the open tabs: only for pages the test opened itself and saw loaded."""
    return sorted((t["title"], t["url"]) for t in call(ctx, "open_tabs_info"))


def settled_tab_ids(ctx: TaskContext, quiet: float = 1.0, timeout: float = 30.0) -> list[str]:
    """The DevTools target ids of the open tabs, once the browser's own first navigation has settled.

    A fresh Chromium's first tab goes from ``about:blank`` to its new-tab page (title and URL change,
    at a moment that depends on the machine and the browser's version); its target id stays. So tabs
    are compared by id, and taken only after the list has not changed for ``quiet`` seconds.
    """
    deadline = time.monotonic() + timeout
    with DevTools(ctx.devtools_url) as devtools:
        devtools.wait_available()
        seen = None
        since = time.monotonic()
        while True:
            pages = devtools.pages()
            now = sorted((p["id"], p.get("url", ""), p.get("title", "")) for p in pages)
            if now != seen:
                seen, since = now, time.monotonic()
            elif pages and time.monotonic() - since >= quiet:
                return sorted(p["id"] for p in pages)
            assert time.monotonic() < deadline, f"the browser's tabs kept changing for {timeout:g} s: {now}"
            time.sleep(0.1)  # poll DevTools' tab list


def test_open_tabs_then_open_tabs_info_and_close_tabs(fresh_desktop: Desktop, site: FileServer, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    one, two = site.url("one.html"), site.url("two.html")
    run_setup(ctx, steps(*START_CHROME, {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [one, two]}}))
    # The start tab is gone; the task's tabs are open and loaded.
    assert tabs(ctx) == [("Page One", one), ("Page Two", two)]
    run_setup(ctx, steps({"type": "chrome_close_tabs", "parameters": {"urls_to_close": [one]}}))
    assert tabs(ctx) == [("Page Two", two)]


def test_active_tab_getters(fresh_desktop: Desktop, site: FileServer, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    url = site.url("three.html") + "?q=term&lang=en"
    run_setup(ctx, steps(*START_CHROME, {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [url]}}))
    # The address bar shows the URL without its scheme; goto_prefix puts one back, as upstream.
    from pytest_osworld.evaluation.getters.chrome import _address_bar_text

    tree = ctx.guest.accessibility()
    assert tree is not None
    assert _address_bar_text(tree) == url.removeprefix("http://")
    shown = call(ctx, "active_url_from_accessTree", goto_prefix="http://")
    assert shown == url
    info = call(ctx, "active_tab_info", goto_prefix="http://")
    assert info["title"] == "Page Three" and info["url"] == url
    assert "third heading" in info["content"]
    parsed = call(ctx, "active_tab_url_parse", goto_prefix="http://", parse_keys=["q", "lang"], replace={"q": "query"})
    assert parsed == {"lang": "en", "query": "term"}
    assert call(
        ctx, "url_dashPart", goto_prefix="http://", partIndex=3, needDeleteId=True, returnType="json", key="page"
    ) == {"page": "three.html"}
    assert tabs(ctx) == [("Page Three", url)]  # the getters' own pages are closed again


def test_info_from_website_and_page_info(fresh_desktop: Desktop, site: FileServer, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    run_setup(ctx, steps(*START_CHROME))
    DevTools(ctx.devtools_url).wait_available()
    infos = call(
        ctx,
        "info_from_website",
        url=site.url("two.html"),
        backups=["b"],
        infos=[
            {"action": "attribute", "selector": "span.p", "attribute": "data-k"},
            {"action": "click_and_inner_text", "selector": ["#go", "#h"]},
            {"action": "inner_text", "selector": "//span[@class='p']"},
        ],
    )
    assert infos == ["attr-value", "third heading", "two"]
    backups = call(
        ctx,
        "info_from_website",
        url=site.url("one.html"),
        backups=["fallback"],
        infos=[{"action": "inner_text", "selector": "#absent"}],
    )
    assert backups == ["fallback"]
    page = call(ctx, "page_info", url=site.url("one.html"))
    assert page["title"] == "Page One" and "first value" in page["content"]


def test_active_tab_html_parse_reads_the_live_page(fresh_desktop: Desktop, site: FileServer, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    url = site.url("form.html") + "?day=10"
    other = site.url("one.html")
    run_setup(ctx, steps(*START_CHROME, {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [other, url]}}))
    # What the agent typed is part of the answer: the value is read off the open page, not a reload.
    with DevTools(ctx.devtools_url) as devtools:
        target = next(p for p in devtools.pages() if p["url"] == url)
        with devtools.session(target) as cdp:
            cdp.evaluate("document.querySelector('input').value = '  James Smith '")

    def parse(category: str, **config: Any) -> Any:
        return call(ctx, "active_tab_html_parse", goto_prefix="http://", category=category, **config)

    assert parse(
        "class",
        class_multiObject={"loc": {"0": "start", "1": "end", "2": "missing"}},
        class_singleObject={"route": "route", "absent": "none"},
        class_multiObject_child={"route": {"0": "from", "1": "to"}},
        class_multiObject_only_child={"card": {"0": "title"}},
        class_multiObject_search_exist={"loc": ["NYC", "Paris", "is_other_exist"]},
    ) == {
        "start": "Boston Logan",
        "end": "NYC",
        "missing": "",
        "route": "SEAJFK",
        "none": "",
        "from": "SEA",
        "to": "JFK",
        "title": "Card title",
        "NYC": True,
        "Paris": False,
        "is_other_exist": True,
    }
    assert parse("xpath", xpathObject={"//div[@id='main']/p/b": "where", "//table": "nothing", "//[broken": "bad"}) == {
        "where": "Terminal B",
        "nothing": "",
        "bad": "",
    }
    assert parse("input", inputObject={"//form/input[1]": "name"}) == {"name": "James Smith"}
    assert parse("label", labelObject={"pick-up location": "label"}) == {"label": "Pick-up   Location: Terminal B"}
    assert parse(
        "class&url",
        class_multiObject={"loc": ["nyc"]},
        class_multiObject_li={"cats": ["Shoes"]},
        url_include_expected=["day=10", "day=11"],
        url_include_expected_multichoice={"form": "Form"},
    ) == {"nyc": True, "shoes": True, "is_other_exist": True, "day=10": True, "day=11": False, "form": True}
    # The tab the address bar shows is the one read; a URL that no open page has gives {}.
    run_setup(ctx, steps({"type": "chrome_close_tabs", "parameters": {"urls_to_close": [url]}}))
    assert parse("xpath", xpathObject={"//p": "p"}) == {"p": "first value"}
    assert call(ctx, "active_tab_html_parse", goto_prefix="https://", category="xpath", xpathObject={"//p": "p"}) == {}


def test_url_path_parse_reads_shop_facets_off_the_active_url(
    fresh_desktop: Desktop, site: FileServer, tmp_path: Path
) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    url = site.url(
        "shop/mens-clothing/shirts/Men_regular_size_t,Price_discount_range,Sleeve_length/"
        "L,50_PERCENT_ off %26 more,short-sleeve?id=1"
    )
    run_setup(ctx, steps(*START_CHROME, {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [url]}}))
    keys = ["mens_clothing", "shirts", "Men_regular_size_t", "Price_discount_range", "short_sleeve"]
    assert call(ctx, "url_path_parse", goto_prefix="http://", parse_keys=keys) == {
        "mens_clothing": True,
        "shirts": True,
        "short_sleeve": True,
        "Men_regular_size_t": "L",
        "Price_discount_range": "50_PERCENT_ off & more",
    }


def test_pdf_from_url_prints_the_page_or_leaves_upstreams_stub(
    fresh_desktop: Desktop, site: FileServer, tmp_path: Path
) -> None:
    from pypdf import PdfReader

    ctx = make_context(fresh_desktop, tmp_path)
    run_setup(ctx, steps(*START_CHROME))
    before = settled_tab_ids(ctx)
    printed = Path(call(ctx, "pdf_from_url", path=site.url("three.html"), dest="gold.pdf"))
    assert printed.name == "gold.pdf"
    page = PdfReader(printed).pages[0]
    assert "third heading" in page.extract_text()
    assert (float(page.mediabox.width), float(page.mediabox.height)) == (612.0, 792.0)  # Letter, as upstream
    stub = Path(call(ctx, "pdf_from_url", path="http://127.0.0.1:9/nothing", dest="missing.pdf"))
    assert stub.read_bytes() == b"%PDF-1.4\n%EOF\n"
    assert settled_tab_ids(ctx) == before  # the getter's own pages are closed again, the user's kept


def test_open_tabs_info_relaunches_a_closed_browser(fresh_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path)
    # Only the forwarder runs (the agent closed Chrome): the getter starts Chrome again, as upstream.
    run_setup(ctx, steps(START_CHROME[1]))
    assert not DevTools(ctx.devtools_url).available()
    found = call(ctx, "open_tabs_info")
    # The relaunched browser's one start tab, whatever page this browser version starts with.
    assert len(found) == 1 and set(found[0]) == {"title", "url"}
    assert len(settled_tab_ids(ctx)) == 1


def _empty_history_from_chrome(ctx: TaskContext, tmp_path: Path) -> Path:
    """An empty History database written by the image's own browser (upstream ships one like it)."""
    run_setup(ctx, steps(*START_CHROME))
    DevTools(ctx.devtools_url).wait_available()
    wait_for(
        lambda: ctx.guest.file("~/.config/google-chrome/Default/History") is not None, "History file", timeout=30.0
    )
    ctx.guest.execute(["pkill", "-f", "remote-debugging-port=1337"])
    wait_for(lambda: not DevTools(ctx.devtools_url).available(), "browser gone", timeout=30.0)
    local = tmp_path / "history_empty.sqlite"
    history = ctx.guest.file("~/.config/google-chrome/Default/History")
    assert history is not None
    local.write_bytes(history)
    db = sqlite3.connect(local)
    db.execute("DELETE FROM visits")
    db.execute("DELETE FROM urls")
    db.commit()
    db.close()
    return local


def test_update_browse_history_then_history_getter(fresh_desktop: Desktop, tmp_path: Path) -> None:
    ctx = make_context(fresh_desktop, tmp_path, offline=True)
    ctx.assets.put_file(HISTORY_EMPTY_URL, _empty_history_from_chrome(ctx, tmp_path))
    before = time.time()
    run_setup(
        ctx,
        steps(
            {
                "type": "update_browse_history",
                "parameters": {
                    "history": [
                        {
                            "url": "https://www.example.com/a",
                            "title": "Example A",
                            "visit_time_from_now_in_seconds": 3600,
                        },
                        {"url": "https://docs.example.org/b", "title": "Docs B", "visit_time_from_now_in_seconds": 60},
                    ]
                },
            }
        ),
    )
    rows = call(ctx, "history", dest="History.sqlite")
    assert [(url, title) for url, title, _ in rows] == [
        ("https://www.example.com/a", "Example A"),
        ("https://docs.example.org/b", "Docs B"),
    ]
    # Chrome's clock: microseconds since 1601; the first visit is an hour before the second's minute.
    epoch_offset = 11644473600
    visited = [t / 1e6 - epoch_offset for _, _, t in rows]
    assert before - 3600 - 5 < visited[0] < before - 3600 + 60
    assert before - 60 - 5 < visited[1] < before + 60
    # The browser starts on it and keeps the visits.
    run_setup(ctx, steps(*START_CHROME))
    DevTools(ctx.devtools_url).wait_available()
    assert len(call(ctx, "history", dest="History2.sqlite")) >= 2


def test_offline_update_browse_history_needs_the_cached_database(fresh_desktop: Desktop, tmp_path: Path) -> None:
    from pytest_osworld.setup.errors import SetupError

    ctx = make_context(fresh_desktop, tmp_path, offline=True)
    with pytest.raises(SetupError, match="history_empty.sqlite"):
        run_setup(ctx, steps({"type": "update_browse_history", "parameters": {"history": []}}))
