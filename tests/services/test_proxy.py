"""The recording proxy: the server on the host's python (real sockets on loopback addresses of their own),
the built-in service in a real container, OSWorld's ``proxy`` setting, and the bundled proxy task in real runs.

Each client below sends from a loopback address of its own (127.0.0.2, 127.0.0.3, ...): to the proxy
they are different sandboxes, as the sandboxes of a run are on the services' network.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import socket
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest

from pytest_osworld.evaluation.getters import get_getter
from pytest_osworld.guest.client import GuestClient
from pytest_osworld.sandbox import Owner, parse_hosts
from pytest_osworld.services import BUILTIN, defined, required
from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.services.naming import state_key
from pytest_osworld.services.pool import ServicePool, remove_services
from pytest_osworld.settings import Settings
from pytest_osworld.setup.assets import AssetCache
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.setup.steps import through_proxy
from pytest_osworld.tasks.model import Task
from tests.episode.runs import run_tasks
from tests.services.tasks import plain_task, write_tasks
from tests.support.paths import REPO
from tests.support.services import run_leftovers, server_process
from tests.support.taskfactory import task

UPSTREAM_ENV = "OSWORLD_PROXY_UPSTREAM"
BUNDLED = REPO / "tasks" / "proxy.jsonl"


# --- a real origin server and real proxy processes ------------------------------------------------


@dataclass
class Origin:
    port: int
    seen: list[dict[str, str]] = field(default_factory=list)  # each request's path and headers


@pytest.fixture
def origin() -> Iterator[Origin]:
    """An HTTP server on 127.0.0.1: ``GET /page/NAME`` -> ``page NAME``, ``POST /echo`` -> the body, else 404."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _reply(self, status: int, body: bytes) -> None:
            seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.startswith("/page/"):
                return self._reply(200, f"page {self.path[6:]}".encode())
            return self._reply(404, b"no such page")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            return self._reply(200 if self.path == "/echo" else 404, body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Origin(port=server.server_address[1], seen=seen)
    server.shutdown()
    server.server_close()


@dataclass
class Proxy:
    process: subprocess.Popen[str]
    port: int
    log: Path

    def control(self, method: str, path: str, source: str = "127.0.0.1") -> tuple[int, Any]:
        """A control request (origin form) from ``source``: the status and the JSON answer."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10, source_address=(source, 0))
        try:
            connection.request(method, path)
            answer = connection.getresponse()
            return answer.status, json.loads(answer.read())
        finally:
            connection.close()

    def register(self, source: str, key: str) -> None:
        assert self.control("GET", f"/api/register?cookie={key}", source) == (
            200,
            {"user_id": key, "registered": source},
        )

    def state(self, key: str) -> dict[str, Any]:
        status, body = self.control("GET", f"/api/state?cookie={key}")
        assert status == 200 and body["user_id"] == key
        data: dict[str, Any] = body["state"]["data"]
        return data

    def output(self) -> str:
        """Everything the process wrote (stdout and stderr); the process is stopped first."""
        if self.process.poll() is None:
            self.process.terminate()
        stdout, _ = self.process.communicate(timeout=10)
        return stdout + self.log.read_text()


@pytest.fixture
def start_proxy(tmp_path: Path) -> Iterator[Any]:
    started: list[Proxy] = []

    def start(**env: str) -> Proxy:
        log = tmp_path / f"proxy-{len(started)}.log"
        clean = {k: v for k, v in os.environ.items() if k not in (UPSTREAM_ENV, "PROXY_CREDENTIALS")}
        with log.open("w") as err:
            process = subprocess.Popen(
                **server_process("proxy", tmp_path, {**clean, "PROXY_BIND": "127.0.0.1", "PROXY_PORT": "0", **env}),
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        assert process.stdout is not None
        line = process.stdout.readline()  # printed once it listens: the readiness check
        proxy = Proxy(process=process, port=int(line.rsplit(":", 1)[1]) if line else 0, log=log)
        started.append(proxy)
        assert line.startswith("proxy: listening on 127.0.0.1:"), proxy.output()
        return proxy

    yield start
    for proxy in started:
        if proxy.process.poll() is None:
            proxy.process.kill()
            proxy.process.communicate(timeout=10)


def through(proxy: Proxy, source: str) -> http.client.HTTPConnection:
    """A client of the proxy sending from ``source`` (requests name absolute URLs)."""
    return http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=20, source_address=(source, 0))


def fetch(client: http.client.HTTPConnection, method: str, url: str, body: bytes | None = None) -> tuple[int, bytes]:
    client.request(method, url, body=body)
    answer = client.getresponse()
    return answer.status, answer.read()


def fetch_once(proxy: Proxy, source: str, url: str) -> tuple[int, bytes]:
    """One GET from ``source`` on a connection of its own."""
    client = through(proxy, source)
    try:
        return fetch(client, "GET", url)
    finally:
        client.close()


def tunnel(proxy: Proxy, source: str, target: str, headers: str = "") -> tuple[bytes, socket.socket]:
    """``CONNECT target`` from ``source``: the proxy's answer head, and the socket (the tunnel when 200)."""
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=20, source_address=(source, 0))
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{headers}\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(1)
        if not data:
            break
        head += data
    return head, sock


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while data := sock.recv(65536):
        chunks.append(data)
    return b"".join(chunks)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def request_entry(method: str, port: int, path: str | None, status: int, outcome: str, **extra: str) -> dict[str, Any]:
    return {
        "method": method,
        "host": "127.0.0.1",
        "port": port,
        "path": path,
        "status": status,
        "outcome": outcome,
    } | extra


# --- the server -------------------------------------------------------------------------------


def test_plain_http_is_forwarded_and_recorded_under_the_registered_key(start_proxy: Any, origin: Origin) -> None:
    proxy = start_proxy()
    proxy.register("127.0.0.2", "task-a")
    base = f"http://127.0.0.1:{origin.port}"
    client = through(proxy, "127.0.0.2")  # one connection, kept alive across the requests
    assert fetch(client, "GET", f"{base}/page/one") == (200, b"page one")
    assert fetch(client, "GET", f"{base}/missing") == (404, b"no such page")
    assert fetch(client, "POST", f"{base}/echo", b"hello") == (200, b"hello")
    client.close()
    assert proxy.state("task-a") == {
        "hosts": [{"host": "127.0.0.1", "port": origin.port, "requests": 3, "reached": True}],
        "requests": [
            request_entry("GET", origin.port, "/page/one", 200, "answered"),
            request_entry("GET", origin.port, "/missing", 404, "answered"),
            request_entry("POST", origin.port, "/echo", 200, "answered"),
        ],
    }
    # The origin got origin-form requests with its own Host, and nothing meant for the proxy.
    assert [s["path"] for s in origin.seen] == ["/page/one", "/missing", "/echo"]
    assert all(
        s["host"] == f"127.0.0.1:{origin.port}" and not any(k.startswith("proxy-") for k in s) for s in origin.seen
    )
    assert proxy.control("GET", "/health") == (200, {"status": "ok", "upstream": False})


def test_connect_is_a_tunnel_that_records_the_host_only(start_proxy: Any, origin: Origin) -> None:
    proxy = start_proxy()
    proxy.register("127.0.0.3", "task-b")
    head, sock = tunnel(proxy, "127.0.0.3", f"127.0.0.1:{origin.port}")
    with sock:
        assert head.startswith(b"HTTP/1.1 200"), head
        sock.sendall(b"GET /page/inside HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_all(sock).endswith(b"page inside")  # bytes through, untouched
    refused = closed_port()
    head, sock = tunnel(proxy, "127.0.0.3", f"127.0.0.1:{refused}")
    with sock:
        assert head.startswith(b"HTTP/1.1 502"), head
        assert b"connection refused" in read_all(sock)
    state = proxy.state("task-b")
    assert state["requests"] == [
        request_entry("CONNECT", origin.port, None, 200, "tunnelled"),
        request_entry("CONNECT", refused, None, 502, "unreachable", error="connection refused"),
    ]
    assert [(h["port"], h["reached"]) for h in state["hosts"]] == [(origin.port, True), (refused, False)]
    assert "inside" not in json.dumps(state)  # a tunnel is never looked into


def test_each_sandbox_is_recorded_apart_and_a_reused_address_starts_clean(start_proxy: Any, origin: Origin) -> None:
    proxy = start_proxy()
    proxy.register("127.0.0.4", "a")
    proxy.register("127.0.0.5", "b")
    base = f"http://127.0.0.1:{origin.port}"

    def browse(source: str, name: str) -> None:
        client = through(proxy, source)
        for i in range(20):
            assert fetch(client, "GET", f"{base}/page/{name}-{i}")[0] == 200
        client.close()

    with ThreadPoolExecutor(2) as pool:  # two sandboxes at once
        list(pool.map(browse, ["127.0.0.4", "127.0.0.5"], ["a", "b"]))
    browse("127.0.0.6", "stray")  # an address no task registered: forwarded, recorded nowhere
    for key in ("a", "b"):
        paths = [r["path"] for r in proxy.state(key)["requests"]]
        assert paths == [f"/page/{key}-{i}" for i in range(20)]

    # 127.0.0.4's sandbox is removed and Docker gives its address to the next task's sandbox, which
    # registers: from then on the address is the new key's, even on a connection opened before.
    kept_alive = through(proxy, "127.0.0.4")
    assert fetch(kept_alive, "GET", f"{base}/page/old-sandbox")[0] == 200
    proxy.register("127.0.0.4", "c")
    assert fetch(kept_alive, "GET", f"{base}/page/new-sandbox")[0] == 200
    kept_alive.close()
    assert [r["path"] for r in proxy.state("c")["requests"]] == ["/page/new-sandbox"]
    assert [r["path"] for r in proxy.state("a")["requests"]][-1] == "/page/old-sandbox"
    # A key registered again (the task runs again, on another sandbox) starts empty, and only its
    # newest address counts for it.
    proxy.register("127.0.0.7", "c")
    browse("127.0.0.4", "after")
    assert proxy.state("c") == {"hosts": [], "requests": []}


def test_state_resets_per_key_and_whole(start_proxy: Any, origin: Origin) -> None:
    proxy = start_proxy()
    proxy.register("127.0.0.8", "r1")
    proxy.register("127.0.0.9", "r2")
    url = f"http://127.0.0.1:{origin.port}/page/x"
    for source in ("127.0.0.8", "127.0.0.9"):
        assert fetch_once(proxy, source, url)[0] == 200
    status, body = proxy.control("DELETE", "/api/state?cookie=r1")
    assert status == 200 and body["state"]["data"] == {"hosts": [], "requests": []}
    assert len(proxy.state("r2")["requests"]) == 1  # only r1 was emptied
    assert fetch_once(proxy, "127.0.0.8", url)[0] == 200
    assert len(proxy.state("r1")["requests"]) == 1  # its address still counts for it
    assert proxy.control("POST", "/reset") == (200, {"reset": True})
    assert fetch_once(proxy, "127.0.0.8", url)[0] == 200
    assert proxy.state("r1") == proxy.state("r2") == {"hosts": [], "requests": []}  # keys and addresses forgotten
    assert proxy.control("GET", "/api/state")[0] == 400
    assert proxy.control("GET", "/nowhere")[0] == 404


def test_chaining_through_an_upstream_proxy_with_credentials(start_proxy: Any, origin: Origin) -> None:
    password = f"pw-{secrets.token_hex(8)}"
    upstream = start_proxy(PROXY_CREDENTIALS=f"relay:{password}")
    base = f"http://127.0.0.1:{origin.port}"
    assert fetch_once(upstream, "127.0.0.2", f"{base}/page/x")[0] == 407  # it needs them
    upstream.register("127.0.0.1", "front")  # the chained proxy's own address, as the upstream sees it
    front = start_proxy(**{UPSTREAM_ENV: f"http://relay:{password}@127.0.0.1:{upstream.port}"})
    wrong = start_proxy(**{UPSTREAM_ENV: f"http://relay:not-{password}@127.0.0.1:{upstream.port}"})
    down = start_proxy(**{UPSTREAM_ENV: f"http://relay:{password}@127.0.0.1:{closed_port()}"})
    for proxy in (front, wrong, down):
        proxy.register("127.0.0.10", "task")
    assert front.control("GET", "/health") == (200, {"status": "ok", "upstream": True})

    answers: list[bytes] = []
    status, body = fetch_once(front, "127.0.0.10", f"{base}/page/chained")
    assert (status, body) == (200, b"page chained")
    head, sock = tunnel(front, "127.0.0.10", f"127.0.0.1:{origin.port}")
    with sock:
        assert head.startswith(b"HTTP/1.1 200"), head
        sock.sendall(b"GET /page/tunnelled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_all(sock).endswith(b"page tunnelled")
    # The upstream saw both, from the chained proxy: everything went through it.
    assert [(r["method"], r["path"], r["status"]) for r in upstream.state("front")["requests"]] == [
        ("GET", "/page/chained", 200),
        ("CONNECT", None, 200),
    ]
    assert [r["outcome"] for r in front.state("task")["requests"]] == ["answered", "tunnelled"]

    for proxy, error in (
        (wrong, "the upstream proxy refused the credentials"),
        (down, "the upstream proxy: connection refused"),
    ):
        status, body = fetch_once(proxy, "127.0.0.10", f"{base}/page/never")
        assert status == 502 and error.encode() in body, body
        head, sock = tunnel(proxy, "127.0.0.10", f"127.0.0.1:{origin.port}")
        with sock:
            answers += [head, body, read_all(sock)]
        assert head.startswith(b"HTTP/1.1 502"), head
        assert [(r["status"], r["error"].startswith(error)) for r in proxy.state("task")["requests"]] == [
            (502, True),
            (502, True),
        ]
    assert all(s["path"] != "/page/never" and "proxy-authorization" not in s for s in origin.seen)
    # The credentials are nowhere: not in answers, records, nor anything a proxy wrote.
    states = [
        json.dumps(p.state(k)) for p, k in ((upstream, "front"), (front, "task"), (wrong, "task"), (down, "task"))
    ]
    outputs = [p.output() for p in (upstream, front, wrong, down)]
    for text in [*states, *outputs, *(a.decode(errors="replace") for a in answers)]:
        assert password not in text
    assert "GET http://127.0.0.1" in outputs[1]  # the logs are there, only without the secret


def test_a_malformed_upstream_stops_the_proxy_without_repeating_it(tmp_path: Path) -> None:
    password = f"pw-{secrets.token_hex(8)}"
    env = {**os.environ, "PROXY_BIND": "127.0.0.1", "PROXY_PORT": "0"}
    env[UPSTREAM_ENV] = f"socks5://relay:{password}@127.0.0.1:1080"
    done = subprocess.run(**server_process("proxy", tmp_path, env), capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert f"{UPSTREAM_ENV} is not an http://" in done.stderr
    assert password not in done.stdout + done.stderr


def test_the_getters_read_the_tasks_record(start_proxy: Any, origin: Origin, tmp_path: Path) -> None:
    proxy = start_proxy()
    proxy.register("127.0.0.11", "run-chrome/t")  # task keys hold / and #: the getter quotes them
    client = through(proxy, "127.0.0.11")
    fetch(client, "GET", f"http://127.0.0.1:{origin.port}/page/a?b=c")
    client.close()
    tunnel(proxy, "127.0.0.11", f"127.0.0.1:{closed_port()}")[1].close()
    settings = Settings()
    access = ServiceAccess(
        name="proxy",
        hostname="proxy.osworld.test",
        ports=(3128,),
        state_key="run-chrome/t",
        host_urls={3128: f"http://127.0.0.1:{proxy.port}"},
    )
    ctx = TaskContext(
        guest=GuestClient("http://127.0.0.1:9"),  # not reached: the getters ask the proxy only
        url=lambda port: "http://127.0.0.1:9",
        settings=settings,
        assets=AssetCache.from_settings(settings),
        cache_dir=tmp_path / "cache",
        services={"proxy": access},
    )
    requests = get_getter("proxy_requests")(ctx, {"type": "proxy_requests"})
    assert requests[0] == f"GET http://127.0.0.1:{origin.port}/page/a?b=c 200"
    assert requests[1].startswith("CONNECT 127.0.0.1:") and requests[1].endswith(" 502")
    assert get_getter("proxy_hosts")(ctx, {"type": "proxy_hosts"}) == [f"127.0.0.1:{origin.port}"]
    ctx.services = {}
    with pytest.raises(ValueError, match=r"does not hold the service 'proxy' \(it holds: none\)"):
        get_getter("proxy_requests")(ctx, {"type": "proxy_requests"})
    ctx.close()


# --- OSWorld's proxy setting ----------------------------------------------------------------------


def test_proxy_true_takes_the_proxy_only_when_the_run_enables_it() -> None:
    """OSWorld's enable_proxy: off by default, so the upstream tasks with proxy: true run on the
    sandbox's own network; a task that lists the service gets it either way."""
    flagged = Task.model_validate(task("px", domain="chrome", proxy=True))
    listed = Task.model_validate(task("pl", domain="chrome", services=["proxy", "echo"]))
    off, on = Settings(), Settings(proxy=True)
    assert "proxy" in defined(off)  # built in, yet not taken
    assert required(flagged, defined(off), proxy=off.services.proxy) == []
    assert required(flagged, defined(on), proxy=on.services.proxy) == ["proxy"]
    assert required(listed, defined(off), proxy=off.services.proxy) == ["proxy", "echo"]


def test_setup_launched_chrome_goes_through_the_proxy_the_task_holds(tmp_path: Path) -> None:
    settings = Settings()
    access = ServiceAccess(name="proxy", hostname="proxy.osworld.test", ports=(3128,), state_key="k")
    ctx = TaskContext(
        guest=GuestClient("http://127.0.0.1:9"),
        url=lambda port: "http://127.0.0.1:9",
        settings=settings,
        assets=AssetCache.from_settings(settings),
        cache_dir=tmp_path,
    )
    chrome = ["google-chrome", "--remote-debugging-port=1337"]
    assert through_proxy(ctx, chrome, False) == (chrome, "")  # no proxy held: unchanged
    ctx.services = {"proxy": access}
    flag = "--proxy-server=http://proxy.osworld.test:3128"
    assert through_proxy(ctx, chrome, False) == ([*chrome, flag], f"through the proxy service ({flag})")
    assert through_proxy(ctx, "google-chrome --incognito", False)[0] == ["google-chrome", "--incognito", flag]
    # As upstream: a shell string and other programs are left alone.
    assert through_proxy(ctx, "google-chrome --incognito", True) == ("google-chrome --incognito", "")
    assert through_proxy(ctx, ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"], False)[1] == ""
    ctx.close()


# --- the built-in service, and real runs -------------------------------------------------------------


@pytest.mark.docker
def test_the_upstream_reaches_the_container_by_name_only(
    engine: docker.DockerClient, desktop_image: str, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = f"pw-{secrets.token_hex(8)}"
    value = f"http://relay:{password}@upstream.invalid:3128"
    monkeypatch.setenv(UPSTREAM_ENV, value)
    definition = BUILTIN["proxy"]
    assert definition.pass_env == [UPSTREAM_ENV] and UPSTREAM_ENV not in definition.env
    assert password not in definition.model_dump_json()
    pool = ServicePool(defined(Settings()), host=parse_hosts([])[0], owner=Owner(run_id=run_id), suffix="osworld.test")
    try:
        with pool.for_task(["proxy"], "chrome/t") as held:
            record = held.records["proxy"]
            assert record.state_key == f"{run_id}-chrome~2Ft"
            assert password not in record.model_dump_json()
            health = httpx.get(held.access["proxy"].url() + "/health", trust_env=False).json()
            assert health == {"status": "ok", "upstream": True}  # the value got in, and was understood
            container = engine.containers.get(record.id)
            assert f"{UPSTREAM_ENV}={value}" in container.attrs["Config"]["Env"]
            assert password not in container.logs().decode()
    finally:
        pool.close()
        remove_services(parse_hosts([]), run_id)
    assert run_leftovers(engine, run_id) == ([], [])


def flagged_copy(bundled: dict[str, Any]) -> dict[str, Any]:
    """The bundled task as one of upstream's ``proxy: true`` tasks visiting another page; its evaluator
    also fails if it saw the bundled task's page (the two run at once, on two sandboxes)."""
    copy: dict[str, Any] = json.loads(json.dumps(bundled).replace("page=proxied", "page=flagged"))
    copy.update(id="proxy-flagged-visit", proxy=True, services=["echo"])
    copy["evaluator"] = {
        "func": ["check_include_exclude", "is_in_list"],
        "conj": "and",
        "result": [{"type": "proxy_requests"}, {"type": "proxy_hosts"}],
        "expected": [
            {
                "type": "rule",
                "rules": {
                    "include": ["GET {SERVICE_URL:echo}/echo?page=flagged 200"],
                    "exclude": ["GET {SERVICE_URL:echo}/echo?page=proxied 200"],
                },
            },
            {"type": "rule", "rules": {"expected": "{SERVICE_HOST:echo}:8000"}},
        ],
    }
    return copy


@pytest.mark.docker
def test_the_bundled_proxy_task_passes_with_the_oracle_and_fails_with_the_null_agent(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    bundled = json.loads(BUNDLED.read_text(encoding="utf-8"))
    assert bundled["id"].startswith("proxy-") and bundled["domain"] == "chrome"
    tasks = osworld_pytester.path / "t.jsonl"
    tasks.write_text(json.dumps(bundled) + "\n" + json.dumps(flagged_copy(bundled)) + "\n", encoding="utf-8")
    run = run_tasks(
        osworld_pytester, tasks, "-p", "xdist", "-n", "2", "--osworld-agent", "oracle", "--osworld-proxy", run_id=run_id
    )
    run.result.assert_outcomes(passed=2)
    records = run.records()
    for key in ("chrome/proxy-visit-page", "chrome/proxy-flagged-visit"):
        record = records[key]
        assert record["score"] == 1.0, (key, record["message"])
        assert record["services"]["proxy"]["state_key"] == state_key(run_id, key)
        assert (
            record["setup_steps"][0]["note"]
            == "through the proxy service (--proxy-server=http://proxy.osworld.test:3128)"
        )
    assert {r["worker"] for r in records.values()} == {"gw0", "gw1"}  # two sandboxes at once
    assert run_leftovers(engine, run_id) == ([], [])

    # Without --osworld-proxy a proxy: true task holds no proxy (OSWorld without enable_proxy); the
    # null agent leaves the bundled task at 0 (setup alone never visits the page).
    plain = task("px-plain", proxy=True)
    tasks.write_text(json.dumps(bundled) + "\n" + json.dumps(plain) + "\n", encoding="utf-8")
    null_run = run_tasks(osworld_pytester, tasks, "--osworld-agent", "null", run_id=f"{run_id}-null")
    null_run.result.assert_outcomes(passed=1, failed=1)
    records = null_run.records()
    assert records["chrome/proxy-visit-page"]["score"] == 0.0
    assert records["chrome/proxy-visit-page"]["termination"] == "done"
    assert records["os/px-plain"]["services"] is None and "needs_proxy" in records["os/px-plain"]["markers"]
    assert run_leftovers(engine, f"{run_id}-null") == ([], [])


# A proxy of the profile's own: /health answers; a registration answers 404 for the task "reg-ok"
# (a proxy that records nothing: the task runs) and 503 for any other (the task cannot be recorded).
NOT_RECORDING = """
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 200 if self.path == '/health' else 404 if 'reg-ok' in self.path else 503
        self.send_response(code)
        self.send_header('Content-Length', '0')
        self.end_headers()
http.server.ThreadingHTTPServer(('0.0.0.0', 3128), H).serve_forever()
"""


@pytest.mark.docker
def test_a_sandbox_the_proxy_cannot_register_masks_its_task(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    profile = {"services": {"proxy": {"entrypoint": ["python3", "-c", NOT_RECORDING]}}}
    osworld_pytester.makefile(".yaml", profile=json.dumps(profile))  # JSON is YAML
    tasks = [plain_task("reg-ok") | {"services": ["proxy"]}, plain_task("reg-bad") | {"services": ["proxy"]}]
    run = run_tasks(
        osworld_pytester,
        write_tasks(osworld_pytester.path / "t.jsonl", tasks),
        "--osworld-profile=profile.yaml",
        "--osworld-agent",
        "oracle",
        run_id=run_id,
    )
    assert {k: v for k, v in run.result.parseoutcomes().items() if k != "seconds"} == {"passed": 1, "masked": 1}
    records = run.records()
    assert records["os/reg-ok"]["score"] == 1.0
    bad = records["os/reg-bad"]
    assert bad["termination"] == "service_error" and bad["score"] is None
    assert bad["message"] == (
        "service proxy: the sandbox could not register with it at http://proxy.osworld.test:3128: it answered 503"
    )
    assert bad["setup_steps"] == []  # before the task's first step
    assert run_leftovers(engine, run_id) == ([], [])
