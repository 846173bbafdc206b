"""The live page's server on loopback, with real HTTP clients: the page, its stream of changes, the
guards on its address, and the watch view's websocket bridged to a scripted VNC server (a real TCP
server speaking RFB's server side), read-only unless the run allows input and the view asked."""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websocket

from pytest_osworld.live.channel import Channel
from pytest_osworld.live.rfb import key_event, pointer_event
from pytest_osworld.live.server import LiveServer, LiveServerError
from pytest_osworld.live.state import LiveState
from pytest_osworld.settings.address import LiveAddress

KEY = "os/a#r2"  # a run key with the characters a URL must encode
UPDATE_REQUEST = struct.pack(">BBHHHH", 3, 1, 0, 0, 64, 48)
SERVER_INIT = struct.pack(">HH", 64, 48) + bytes(16) + struct.pack(">I", 4) + b"test"
SCREEN = b"\x00" * 4 + b"frame-bytes"


class ScriptedVnc:
    """RFB 3.8's server side as far as ServerInit, then it keeps what the client sends and answers every
    FramebufferUpdateRequest with a few bytes of screen."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.received = b""
        self.changed = threading.Condition()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            conn.sendall(b"RFB 003.008\n")
            conn.recv(12)
            conn.sendall(b"\x01\x01")
            conn.recv(1)
            conn.sendall(b"\x00\x00\x00\x00")
            conn.recv(1)
            conn.sendall(SERVER_INIT)
            while data := conn.recv(4096):
                with self.changed:
                    self.received += data
                    self.changed.notify_all()
                if UPDATE_REQUEST in data:
                    conn.sendall(SCREEN)

    def wait_for(self, data: bytes, timeout: float = 10.0) -> bytes:
        with self.changed:
            assert self.changed.wait_for(lambda: data in self.received, timeout), self.received
            return self.received


@pytest.fixture
def vnc() -> Iterator[ScriptedVnc]:
    server = ScriptedVnc()
    yield server
    server.listener.close()


def serve(tmp_path: Path, vnc: ScriptedVnc | None = None, *, allow_input: bool = False) -> LiveServer:
    state = LiveState(run_id="run-1", input_allowed=allow_input)
    state.apply({"kind": "selected", "tasks": [{"key": KEY, "name": "os/a[r2]", "max_steps": 15}]})
    state.apply({"kind": "begin", "key": KEY, "worker": "gw0", "at": 1.0})
    if vnc is not None:
        state.apply({"kind": "sandbox", "key": KEY, "sandbox": "box", "vnc": vnc.address})
    novnc = tmp_path / "novnc"
    (novnc / "core").mkdir(parents=True)
    (novnc / "core" / "rfb.js").write_text("export default class RFB {}\n")
    channel = Channel(tmp_path / "channel").make()
    return LiveServer(LiveAddress("127.0.0.1", 0), state, channel, novnc=novnc, allow_input=allow_input).start()


@pytest.fixture
def live(tmp_path: Path, vnc: ScriptedVnc) -> Iterator[LiveServer]:
    server = serve(tmp_path, vnc)
    yield server
    server.close()


def get(url: str, **options: object) -> httpx.Response:
    return httpx.get(url, trust_env=False, **options)  # type: ignore[arg-type]


def open_view(server: LiveServer, *, control: bool = False) -> websocket.WebSocket:
    url = f"ws://127.0.0.1:{server.address.port}/vnc?task=os%2Fa%23r2" + ("&control=1" if control else "")
    ws = websocket.create_connection(url, timeout=10, subprotocols=["binary"])
    assert ws.recv() == b"RFB 003.008\n"
    ws.send_binary(b"RFB 003.008\n")
    assert ws.recv() == b"\x01\x01"
    ws.send_binary(b"\x01")
    assert ws.recv() == b"\x00\x00\x00\x00"
    ws.send_binary(b"\x01")
    assert ws.recv() == SERVER_INIT
    return ws


def test_the_page_its_files_and_its_state_are_served(live: LiveServer) -> None:
    base = live.url
    page = get(base)
    assert page.status_code == 200 and "/static/live.js" in page.text
    script = get(base + "static/live.js")
    assert script.headers["content-type"].startswith("text/javascript") and "EventSource" in script.text
    state = get(base + "api/state").json()
    assert [(t["key"], t["state"], t["watchable"]) for t in state["tasks"]] == [(KEY, "starting", True)]
    module = get(base + "novnc/core/rfb.js")
    assert module.status_code == 200 and module.headers["content-type"].startswith("text/javascript")
    assert get(base + "watch", params={"task": KEY}).status_code == 200


@pytest.mark.parametrize(
    "path",
    ["/static/../server.py", "/static/%2e%2e/server.py", "/novnc/../channel/events-x.jsonl", "/novnc/%2e%2e%2fx"],
)
def test_a_path_that_leaves_its_folder_is_not_served(live: LiveServer, path: str) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", live.address.port, timeout=10)
    try:
        connection.request("GET", path)  # sent as written: http.client does not resolve the dots
        assert connection.getresponse().status == 404
    finally:
        connection.close()


def test_the_stream_sends_every_task_then_what_changed_then_the_end(live: LiveServer) -> None:
    with httpx.stream("GET", live.url + "events", timeout=10, trust_env=False) as stream:
        events = _events(stream.iter_lines())
        name, data = next(events)
        assert name == "snapshot" and [t["key"] for t in data["tasks"]] == [KEY]
        live.state.apply({"kind": "step", "key": KEY, "number": 1, "of": 15})
        name, data = next(events)
        assert name == "update" and [(t["state"], t["step"]) for t in data["tasks"]] == [("step", 1)]
        live.state.end()
        assert [name for name, _ in events][-1] == "end"


def _events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    name = ""
    for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


def test_a_task_screenshot_is_served_from_the_channel(live: LiveServer) -> None:
    live.channel.shot_path(KEY).write_bytes(b"\x89PNG-bytes")
    shot = get(live.url + "shot", params={"task": KEY})
    assert shot.content == b"\x89PNG-bytes" and shot.headers["content-type"] == "image/png"


def test_a_request_for_another_host_name_is_refused(live: LiveServer) -> None:
    port = live.address.port
    assert get(live.url, headers={"Host": f"rebound.example:{port}"}).status_code == 403
    assert get(live.url, headers={"Host": f"localhost:{port}"}).status_code == 200


def test_the_watch_page_says_how_to_install_novnc_when_it_is_missing(tmp_path: Path) -> None:
    state = LiveState(run_id="r")
    problem = "noVNC is not installed: ... apt-get install novnc"
    server = LiveServer(LiveAddress("127.0.0.1", 0), state, Channel(tmp_path).make(), novnc=None, novnc_problem=problem)
    server.start()
    try:
        page = get(server.url + "watch", params={"task": KEY})
        assert page.status_code == 503 and "apt-get install novnc" in page.text
    finally:
        server.close()


def test_a_read_only_view_shows_the_screen_and_keeps_keys_and_pointer_from_the_desktop(
    live: LiveServer, vnc: ScriptedVnc
) -> None:
    ws = open_view(live)
    try:
        ws.send_binary(key_event(0x71, down=True) + pointer_event(5, 5, 1) + UPDATE_REQUEST)
        assert ws.recv() == SCREEN
        # The request came after the key and the pointer on one ordered stream: they were not sent.
        assert vnc.wait_for(UPDATE_REQUEST) == UPDATE_REQUEST
        assert _task(live)["input_dropped"] == 2
    finally:
        ws.close()
    assert not live.channel.human_input(KEY)


def _task(live: LiveServer) -> dict[str, object]:
    task: dict[str, object] = live.state.snapshot()["tasks"][0]
    return task


def test_asking_for_control_in_a_run_that_does_not_allow_input_is_still_read_only(
    live: LiveServer, vnc: ScriptedVnc
) -> None:
    ws = open_view(live, control=True)
    try:
        ws.send_binary(key_event(0x71, down=True) + UPDATE_REQUEST)
        vnc.wait_for(UPDATE_REQUEST)
        assert vnc.received == UPDATE_REQUEST and _task(live)["input_dropped"] == 1
    finally:
        ws.close()


def test_with_input_allowed_a_view_in_control_reaches_the_desktop_and_marks_the_task_first(
    tmp_path: Path, vnc: ScriptedVnc
) -> None:
    server = serve(tmp_path, vnc, allow_input=True)
    try:
        ws = open_view(server, control=True)
        key = key_event(0x71, down=True)
        ws.send_binary(key + UPDATE_REQUEST)
        vnc.wait_for(UPDATE_REQUEST)
        assert vnc.received == key + UPDATE_REQUEST
        mark = server.channel.human_input(KEY)
        assert mark is not None and mark.messages == 1 and mark.first_at == _task(server)["touched_at"]
        ws.close()
    finally:
        server.close()


def test_a_view_from_a_page_of_another_origin_or_of_a_task_not_running_is_refused(live: LiveServer) -> None:
    port = live.address.port
    with pytest.raises(websocket.WebSocketBadStatusException) as foreign:
        websocket.create_connection(f"ws://127.0.0.1:{port}/vnc?task=os%2Fa%23r2", origin="http://evil.example")
    assert foreign.value.status_code == 403
    with pytest.raises(websocket.WebSocketBadStatusException) as idle:
        websocket.create_connection(f"ws://127.0.0.1:{port}/vnc?task=os%2Fqueued")
    assert idle.value.status_code == 404


def test_a_port_in_use_is_an_error_naming_the_setting(live: LiveServer, tmp_path: Path) -> None:
    taken = live.address
    with pytest.raises(LiveServerError, match=rf"--osworld-live {taken}: cannot listen there"):
        LiveServer(taken, LiveState(run_id="r"), Channel(tmp_path).make(), novnc=None)
