"""The mock-website helpers of the task API with upstream's signatures (``desktop_env.controllers.website``,
the state getters, the setup controller's ``_chrome_open_tabs_with_state_setup`` and ``_proxy_setup``),
against real HTTP servers: a recording state server per service, and the project's own mock shop."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.v2.api import getters, website
from pytest_osworld.v2.api.setup_controller import SetupController
from pytest_osworld.v2.api.state import RuntimeUnavailable, TaskRuntime, active
from tests.support.services import services_context, website_server

ENTRY_KEYS = {"cookie", "cookie_dict", "user_id_cookie", "source_url", "state_endpoint", "final_url"}
MAIL_KEY = "run1-v2~2Fw1-mail"
SHOP_KEY = "run1-v2~2Fw1-shop"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    cookie_header: str | None


@dataclass
class StateServer:
    """One site's state protocol (``/api/state``, per cookie from ``?cookie=`` or ``Cookie: user_id=``),
    its files (``/api/files/<name>``, for their owner only), and state documents to download
    (``/states/<name>``). Every request is recorded."""

    url: str = ""
    states: dict[str, Any] = field(default_factory=dict)
    files: dict[tuple[str, str], bytes] = field(default_factory=dict)  # (cookie, path) -> content
    documents: dict[str, str] = field(default_factory=dict)  # /states/<name> -> body
    refuse_put: int | None = None  # answer PUTs with this status instead
    requests: list[Request] = field(default_factory=list)

    def visitor(self, request: Request) -> str:
        if "cookie" in request.query:
            return request.query["cookie"]
        for part in (request.cookie_header or "").split(";"):
            key, _, value = part.strip().partition("=")
            if key == "user_id":
                return value
        return ""


def _handler(site: StateServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, body: Any) -> None:
            self._send(status, json.dumps(body).encode())

        def _handle(self, method: str) -> None:
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            request = Request(method, parts.path, query, self.headers.get("Cookie"))
            site.requests.append(request)
            user = site.visitor(request)
            if parts.path == "/api/state":
                if not user:
                    return self._json(400, {"error": "no visitor"})
                if method == "PUT":
                    if site.refuse_put is not None:
                        return self._json(site.refuse_put, {"error": "state_locked"})
                    length = int(self.headers.get("Content-Length") or 0)
                    site.states[user] = json.loads(self.rfile.read(length))
                elif method == "DELETE":
                    site.states.pop(user, None)
                return self._json(200, {"user_id": user, "state": site.states.get(user, {"data": {}, "meta": {}})})
            if parts.path.startswith("/api/files/") and (user, parts.path) in site.files:
                return self._send(200, site.files[(user, parts.path)], "application/octet-stream")
            if parts.path.startswith("/states/") and parts.path in site.documents:
                return self._send(200, site.documents[parts.path].encode())
            if parts.path == "/api/files/broken":
                return self._json(500, {"error": "broken"})
            return self._json(404, {"error": "not found"})

        def do_GET(self) -> None:
            self._handle("GET")

        def do_PUT(self) -> None:
            self._handle("PUT")

        def do_DELETE(self) -> None:
            self._handle("DELETE")

    return Handler


@pytest.fixture
def servers() -> Iterator[tuple[StateServer, StateServer]]:
    """Two sites, each its own server: ``mailhub`` (its own service) and the run's ``website``."""
    sites = (StateServer(), StateServer())
    running = []
    for site in sites:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
        # A short poll: shutdown() waits for it at every teardown.
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        site.url = f"http://127.0.0.1:{server.server_address[1]}"
        running.append(server)
    try:
        yield sites
    finally:
        for server in running:
            server.shutdown()
            server.server_close()


def _services(mail: StateServer, shop: StateServer) -> dict[str, ServiceAccess]:
    return {
        "mailhub": ServiceAccess("mailhub", "mailhub.osworld.test", (8080,), MAIL_KEY, {8080: mail.url}),
        "website": ServiceAccess("website", "website.osworld.test", (80,), SHOP_KEY, {80: shop.url}),
    }


@pytest.fixture
def runtime(servers: tuple[StateServer, StateServer], tmp_path: Path) -> Iterator[TaskRuntime]:
    running = TaskRuntime("w1", services=_services(*servers), cache_dir=tmp_path / "cache")
    with active(running):
        yield running


@dataclass
class Env:
    """What the state getters read of upstream's env: its cache folder."""

    cache_dir: str


def _cookie_file(folder: Path, name: str = "state_cookie.json") -> dict[str, Any]:
    saved: dict[str, Any] = json.loads((folder / name).read_text(encoding="utf-8"))
    return saved


# --- URLs ----------------------------------------------------------------------------------------


def test_build_website_url_is_the_sites_service_as_the_guest_reaches_it(runtime: TaskRuntime) -> None:
    assert website.build_website_url("mailhub") == "http://mailhub.osworld.test:8080"
    # A site without a service of its own is the run's website service.
    assert website.build_website_url("teamchat") == "http://website.osworld.test"
    assert website.HOST_SUFFIX == "osworld.test" and website.WEBSITE_HOST_SUFFIX == "osworld.test"
    with pytest.raises(ValueError, match="takes a site's name"):
        website.build_website_url("http://mailhub.osworld.test")


@pytest.mark.parametrize(
    ("target", "resolved"),
    [
        (
            "https://mailhub.web.hku.icu/inbox/3?folder=spam#top",
            "http://mailhub.osworld.test:8080/inbox/3?folder=spam#top",
        ),
        ("https://MailHub.web.hku.icu:8443/", "http://mailhub.osworld.test:8080/"),
        ("https://teamchat.web.hku.icu/c/1", "http://website.osworld.test/c/1"),
        ("https://web.hku.icu/x", "http://website.osworld.test/x"),
        ("http://example.org/page?q=1", "http://example.org/page?q=1"),  # any other host stays
        ("https://notweb.hku.icu.example.org/", "https://notweb.hku.icu.example.org/"),
        ("mailhub", "http://mailhub.osworld.test:8080"),
    ],
)
def test_resolve_website_url_maps_the_official_hosts_to_this_runs_sites(
    runtime: TaskRuntime, target: str, resolved: str
) -> None:
    assert website.resolve_website_url(target) == resolved


# --- preparing state -----------------------------------------------------------------------------


def test_an_upstream_positional_call_puts_the_state_and_saves_the_cookie_file(
    runtime: TaskRuntime, servers: tuple[StateServer, StateServer], tmp_path: Path
) -> None:
    mail, shop = servers
    cache = tmp_path / "cache"
    urls = website.prepare_stateful_website_urls(
        "mailhub",
        {"data": {"inbox": ["hello"]}},
        ["https://mailhub.web.hku.icu/settings", "teamchat"],
        str(cache),
        "mail_cookie.json",
    )
    assert urls == [
        f"http://mailhub.osworld.test:8080?cookie={MAIL_KEY}",
        "http://mailhub.osworld.test:8080/settings",
        "http://website.osworld.test",
    ]
    assert mail.states == {MAIL_KEY: {"data": {"inbox": ["hello"]}}} and shop.states == {}
    # Upstream's order: a GET of /api/state, then the PUT with the cookie.
    assert [(r.method, r.path) for r in mail.requests] == [("GET", "/api/state"), ("PUT", "/api/state")]
    assert mail.requests[1].cookie_header == f"user_id={MAIL_KEY}"
    assert not (cache / "state_cookie.json").exists()
    saved = _cookie_file(cache, "mail_cookie.json")
    assert list(saved) == ["entries"] and len(saved["entries"]) == 1
    entry = saved["entries"][0]
    assert set(entry) == ENTRY_KEYS
    assert entry == {
        "cookie": f"user_id={MAIL_KEY}",
        "cookie_dict": {"user_id": MAIL_KEY},
        "user_id_cookie": MAIL_KEY,
        "source_url": "http://mailhub.osworld.test:8080",
        "state_endpoint": "http://mailhub.osworld.test:8080/api/state",
        "final_url": f"http://mailhub.osworld.test:8080?cookie={MAIL_KEY}",
    }


def test_list_apps_with_list_states_each_on_their_own_site(
    runtime: TaskRuntime, servers: tuple[StateServer, StateServer], tmp_path: Path
) -> None:
    mail, shop = servers
    cache = tmp_path / "cache"
    urls = website.prepare_stateful_website_urls(
        app=["https://mailhub.web.hku.icu/inbox?view=all", "shop"],
        state=['{"data": {"inbox": []}}', {"data": {"cart": {"p1": 2}}}],
        additional_urls="https://example.org/help",
        cache_dir=str(cache),
    )
    assert urls == [
        f"http://mailhub.osworld.test:8080/inbox?view=all&cookie={MAIL_KEY}",
        f"http://website.osworld.test?cookie={SHOP_KEY}",
        "https://example.org/help",
    ]
    assert mail.states == {MAIL_KEY: {"data": {"inbox": []}}}
    assert shop.states == {SHOP_KEY: {"data": {"cart": {"p1": 2}}}}
    entries = _cookie_file(cache)["entries"]
    assert [e["source_url"] for e in entries] == [
        "http://mailhub.osworld.test:8080/inbox?view=all",
        "http://website.osworld.test",
    ]
    # Each site's state read back by its url (several entries need one), an official one too.
    env = Env(str(cache))
    mail_state = getters.get_state_with_cookie(env, {"url": "https://mailhub.web.hku.icu/", "return_type": "json"})
    assert mail_state == {"data": {"inbox": []}}
    shop_state = getters.get_state_with_cookie(env, {"url": website.build_website_url("shop"), "return_type": "json"})
    assert shop_state == {"data": {"cart": {"p1": 2}}}
    with pytest.raises(RuntimeError, match="no site URL"):
        getters.get_state_with_cookie(env, {"return_type": "json"})
    with pytest.raises(RuntimeError, match="holds no cookie for http://elsewhere.osworld.test"):
        getters.get_state_with_cookie(env, {"url": "http://elsewhere.osworld.test", "return_type": "json"})


def test_a_state_as_json_text_a_local_file_or_an_http_url(
    runtime: TaskRuntime,
    servers: tuple[StateServer, StateServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mail, _ = servers
    folder = tmp_path / "states"
    folder.mkdir()
    (folder / "inbox.json").write_text('{"data": {"inbox": ["from a file"]}}', encoding="utf-8")
    mail.documents["/states/inbox.json"] = '{"data": {"inbox": ["downloaded"]}}'
    monkeypatch.chdir(tmp_path)  # upstream reads a relative path from the working folder
    given = {
        "json text": ('  {"data": {"inbox": ["text"]}}\n', {"data": {"inbox": ["text"]}}),
        "absolute path": (str(folder / "inbox.json"), {"data": {"inbox": ["from a file"]}}),
        "relative path": (os.path.join("states", "inbox.json"), {"data": {"inbox": ["from a file"]}}),
        "file uri": ((folder / "inbox.json").as_uri(), {"data": {"inbox": ["from a file"]}}),
        "http url": (f"{mail.url}/states/inbox.json", {"data": {"inbox": ["downloaded"]}}),
    }
    for what, (state, expected) in given.items():
        website.prepare_stateful_website_urls("mailhub", state)
        assert mail.states[MAIL_KEY] == expected, what
    with pytest.raises(httpx.HTTPStatusError):
        website.prepare_stateful_website_urls("mailhub", f"{mail.url}/states/missing.json")
    with pytest.raises(json.JSONDecodeError):
        website.prepare_stateful_website_urls("mailhub", "not json, nor a file")


def test_without_cache_dir_no_cookie_file_is_written(runtime: TaskRuntime, tmp_path: Path) -> None:
    assert website.prepare_stateful_website_urls("mailhub", {"data": {}}) == [
        f"http://mailhub.osworld.test:8080?cookie={MAIL_KEY}"
    ]
    assert not (tmp_path / "cache").exists()


def test_the_deprecated_url_keyword_still_names_the_site(runtime: TaskRuntime) -> None:
    assert website.prepare_stateful_website_urls(None, {"data": {}}, url="mailhub") == [
        f"http://mailhub.osworld.test:8080?cookie={MAIL_KEY}"
    ]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"app": None, "state": {}}, ValueError, "needs the site"),
        ({"app": "mailhub", "state": {}, "url": "mailhub"}, ValueError, "not both"),
        ({"app": ["mailhub"], "state": {}}, ValueError, "lists of the same length"),
        ({"app": "mailhub", "state": [{}]}, ValueError, "lists of the same length"),
        ({"app": ["mailhub", "shop"], "state": [{}]}, ValueError, r"differ in length \(2 sites, 1 states\)"),
        ({"app": "mailhub", "state": 42}, ValueError, "a state is a dict, or a string"),
        (
            {"app": ["shop", "teamchat"], "state": [{}, {}]},
            RuntimeUnavailable,
            "both served here by the service 'website'",
        ),
        ({"app": "http://intranet.example.org", "state": {}}, RuntimeUnavailable, "none of the task's services"),
    ],
)
def test_misuse_is_refused_before_any_state_is_put(
    runtime: TaskRuntime,
    servers: tuple[StateServer, StateServer],
    kwargs: dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error, match=message):
        website.prepare_stateful_website_urls(**kwargs)
    assert [r for s in servers for r in s.requests if r.method == "PUT"] == []


def test_a_site_refusing_the_state_raises(runtime: TaskRuntime, servers: tuple[StateServer, StateServer]) -> None:
    servers[0].refuse_put = 403
    with pytest.raises(httpx.HTTPStatusError, match="403"):
        website.prepare_stateful_website_urls("mailhub", {"data": {}})


def test_outside_a_task_or_without_the_service(tmp_path: Path) -> None:
    with pytest.raises(RuntimeUnavailable, match="outside a running OSWorld-V2 task"):
        website.prepare_stateful_website_urls("mailhub", {})
    with active(TaskRuntime("w2")), pytest.raises(RuntimeUnavailable, match="needs the shared service 'website'"):
        website.resolve_website_url("https://mailhub.web.hku.icu/")


# --- reading state -------------------------------------------------------------------------------


def test_get_state_with_cookie_takes_upstreams_config_keys(
    runtime: TaskRuntime, servers: tuple[StateServer, StateServer], tmp_path: Path
) -> None:
    mail, _ = servers
    cache = tmp_path / "cache"
    env = Env(str(cache))
    website.prepare_stateful_website_urls("mailhub", {"data": {"inbox": [1]}}, cache_dir=str(cache))
    mail.requests.clear()

    # By default the state is saved as state_fetched.json and its path returned.
    path = getters.get_state_with_cookie(env, {})
    assert path == str(cache / "state_fetched.json")
    assert json.loads(Path(path).read_text()) == {"data": {"inbox": [1]}}
    # Upstream sends the saved cookie as a header, to the saved endpoint.
    assert [(r.method, r.path, r.query, r.cookie_header) for r in mail.requests] == [
        ("GET", "/api/state", {}, f"user_id={MAIL_KEY}")
    ]
    named = getters.get_state_with_cookie(
        env, {"state_save_name": "mail.json", "parameters": {"ignored": 1}, "get_content": "x"}
    )
    assert named == str(cache / "mail.json")
    assert getters.get_state_with_cookie(env, {"return_type": "json"}) == {"data": {"inbox": [1]}}

    # delete_after_fetch: saved first, then the site's state is reset.
    mail.requests.clear()
    kept = getters.get_state_with_cookie(env, {"delete_after_fetch": True, "state_save_name": "last.json"})
    assert json.loads(Path(kept).read_text()) == {"data": {"inbox": [1]}}
    assert [r.method for r in mail.requests] == ["GET", "DELETE"] and MAIL_KEY not in mail.states

    # Another cookie file, by its name.
    website.prepare_stateful_website_urls("mailhub", {"data": {"n": 2}}, None, str(cache), "other.json")
    assert getters.get_state_with_cookie(env, {"cookie_save_name": "other.json", "return_type": "json"}) == {
        "data": {"n": 2}
    }
    with pytest.raises(RuntimeError, match="no cookie file .*missing.json"):
        getters.get_state_with_cookie(env, {"cookie_save_name": "missing.json"})
    (cache / "bad.json").write_text("{not json")
    with pytest.raises(RuntimeError, match="could not be read"):
        getters.get_state_with_cookie(env, {"cookie_save_name": "bad.json"})


def test_get_state_with_cookie_when_the_site_is_gone(
    runtime: TaskRuntime, servers: tuple[StateServer, StateServer], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    website.prepare_stateful_website_urls("mailhub", {"data": {}}, cache_dir=str(cache))
    gone = ServiceAccess("mailhub", "mailhub.osworld.test", (8080,), MAIL_KEY, {8080: "http://127.0.0.1:9"})
    with (
        active(TaskRuntime("w1", services={"mailhub": gone})),
        pytest.raises(RuntimeError, match=r"could not be fetched from http://mailhub.osworld.test:8080/api/state"),
    ):
        getters.get_state_with_cookie(Env(str(cache)), {"return_type": "json"})


def test_get_state_file_with_cookie(
    runtime: TaskRuntime, servers: tuple[StateServer, StateServer], tmp_path: Path
) -> None:
    mail, _ = servers
    cache = tmp_path / "cache"
    env = Env(str(cache))
    website.prepare_stateful_website_urls("mailhub", {"data": {}}, cache_dir=str(cache))
    mail.files[(MAIL_KEY, "/api/files/59cd__report.pdf")] = b"%PDF-1.4 report"
    mail.files[("someone-else", "/api/files/theirs.pdf")] = b"not ours"

    saved = getters.get_state_file_with_cookie(env, {"file_path": "/api/files/59cd__report.pdf"})
    assert saved == str(cache / "59cd__report.pdf") and Path(saved).read_bytes() == b"%PDF-1.4 report"
    assert mail.requests[-1].cookie_header == f"user_id={MAIL_KEY}"
    renamed = getters.get_state_file_with_cookie(
        env,
        {"file_path": "/api/files/59cd__report.pdf", "save_name": "report.pdf", "url": "https://mailhub.web.hku.icu"},
    )
    assert renamed == str(cache / "report.pdf")
    # Another visitor's file is not found for this cookie: None, as upstream on a 404.
    assert getters.get_state_file_with_cookie(env, {"file_path": "/api/files/theirs.pdf"}) is None
    with pytest.raises(
        RuntimeError, match="could not be fetched from http://mailhub.osworld.test:8080/api/files/broken"
    ):
        getters.get_state_file_with_cookie(env, {"file_path": "/api/files/broken"})
    with pytest.raises(ValueError, match="no file_path"):
        getters.get_state_file_with_cookie(env, {})


# --- the setup controller ------------------------------------------------------------------------


def test_proxy_setup_says_whether_the_task_holds_the_proxy(tmp_path: Path) -> None:
    proxy = ServiceAccess("proxy", "proxy.osworld.test", (3128,), "k", {3128: "http://127.0.0.1:1"})
    through = services_context(tmp_path, {"proxy": proxy})
    assert SetupController(through)._proxy_setup("osworld-public-evaluation") is True
    assert [(s.type, s.ok, s.note) for s in through.steps] == [
        ("proxy", True, "through the proxy service (http://proxy.osworld.test:3128)")
    ]
    direct = services_context(tmp_path, {})
    assert SetupController(direct)._proxy_setup() is False
    assert [(s.type, s.ok, s.note) for s in direct.steps] == [("proxy", True, "no proxy: direct networking")]


def test_setup_dispatches_v2_step_types_to_their_methods(tmp_path: Path) -> None:
    context = services_context(tmp_path, {})
    assert SetupController(context).setup([{"type": "proxy", "parameters": {"client_password": "p"}}]) is True
    assert [(s.type, s.note) for s in context.steps] == [("proxy", "no proxy: direct networking")]


def test_chrome_open_tabs_with_state_setup_records_a_refused_state_and_opens_nothing(
    servers: tuple[StateServer, StateServer], tmp_path: Path
) -> None:
    services = _services(*servers)
    context = services_context(tmp_path, services)
    controller = SetupController(context)
    with active(TaskRuntime("w1", services=services, cache_dir=context.cache_dir, context=context)):
        with pytest.raises(ValueError, match="lists of the same length"):
            controller._chrome_open_tabs_with_state_setup(["mailhub"], {"data": {}})
        servers[0].refuse_put = 403
        with pytest.raises(httpx.HTTPStatusError):
            controller._chrome_open_tabs_with_state_setup("mailhub", {"data": {}}, None, "tabs_cookie.json")
    assert [(s.type, s.ok, s.note) for s in context.steps] == [
        ("website_state", False, "ValueError"),
        ("website_state", False, "HTTPStatusError"),
    ]


# --- the project's mock shop ---------------------------------------------------------------------


@pytest.fixture
def corner_market() -> Iterator[str]:
    """The ``website`` service's own server, run as its container runs it."""
    with website_server() as url:
        yield url


def test_the_round_trip_on_the_projects_shop(corner_market: str, tmp_path: Path) -> None:
    shop = ServiceAccess("website", "website.osworld.test", (80,), SHOP_KEY, {80: corner_market})
    cache = tmp_path / "cache"
    catalogue = {"products": {"n1": {"name": "Notebook", "category": "Stationery", "price_cents": 420, "stock": 3}}}
    with active(TaskRuntime("w1", services={"website": shop}, cache_dir=cache)):
        [url] = website.prepare_stateful_website_urls(
            "shop", {"data": {**catalogue, "cart": {}, "orders": []}}, None, str(cache)
        )
        assert url == f"http://website.osworld.test?cookie={SHOP_KEY}"
        # A visitor of that URL (as the guest's browser) sees the task's catalogue.
        page = httpx.get(f"{corner_market}/?cookie={SHOP_KEY}", trust_env=False)
        assert "Notebook" in page.text and "Desk Lamp" not in page.text
        env = Env(str(cache))
        state = getters.get_state_with_cookie(env, {"url": website.build_website_url("shop"), "return_type": "json"})
        assert state["data"]["products"] == catalogue["products"] and state["meta"]["site"] == "shop"
        getters.get_state_with_cookie(env, {"delete_after_fetch": True})
        reset = getters.get_state_with_cookie(env, {"return_type": "json"})
        assert "p1" in reset["data"]["products"]  # back to the shop's own catalogue
