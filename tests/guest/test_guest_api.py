"""The guest server's endpoints against a real container of the desktop image.

These tests share one container: each leaves behind only files under its own unique path.
"""

from __future__ import annotations

import io
import json
import os
import socket
import time
import uuid
from xml.etree import ElementTree

import httpx
import pytest
from PIL import Image

from tests.support.guest_containers import VNC_PORT, Guest
from tests.support.polling import wait_for

pytestmark = pytest.mark.docker

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def unique_dir() -> str:
    return f"/home/user/tests/{uuid.uuid4().hex[:12]}"


def assert_json_error(answer: httpx.Response, status: int, *words: str) -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status"] == "error"
    text = body["message"]
    assert text == body["error"]
    assert "Traceback" not in answer.text
    for word in words:
        assert word in text, text


# Observation


def test_screenshot_is_a_png_of_the_whole_screen(guest: Guest) -> None:
    data = guest.screenshot()
    assert data.startswith(PNG_SIGNATURE)
    size = guest.http.post("/screen_size").json()
    image = Image.open(io.BytesIO(data))
    image.load()
    assert image.size == (size["width"], size["height"]) == (1920, 1080)
    assert image.mode == "RGB"


def test_screenshot_draws_the_pointer_where_it_is(guest: Guest) -> None:
    region = (1690, 890, 1730, 930)
    guest.pyautogui("pyautogui.moveTo(1700, 900)")
    assert guest.http.get("/cursor_position").json() == [1700, 900]
    with_pointer = Image.open(io.BytesIO(guest.screenshot())).convert("RGB").crop(region)
    guest.pyautogui("pyautogui.moveTo(1400, 700)")
    without_pointer = Image.open(io.BytesIO(guest.screenshot())).convert("RGB").crop(region)
    assert with_pointer.tobytes() != without_pointer.tobytes(), "the pointer is not drawn"


def test_platform_and_desktop_path(guest: Guest) -> None:
    assert guest.http.get("/platform").text == "Linux"
    assert guest.http.post("/desktop_path").json() == {"desktop_path": "/home/user/Desktop"}


def test_terminal_answers_even_without_a_terminal(guest: Guest) -> None:
    answer = guest.http.get("/terminal")
    assert answer.status_code == 200
    body = answer.json()
    assert body["status"] == "success"
    assert body["output"] is None or isinstance(body["output"], str)


def test_accessibility_tree_is_xml_in_upstream_shape(guest: Guest) -> None:
    answer = guest.http.get("/accessibility")
    assert answer.status_code == 200, answer.text
    root = ElementTree.fromstring(answer.json()["AT"])
    assert root.tag == "desktop-frame"


def test_window_size_needs_a_class_and_a_window(guest: Guest) -> None:
    assert_json_error(guest.http.post("/window_size"), 400, "app_class_name")
    answer = guest.http.post("/window_size", data={"app_class_name": "no-such-class"})
    assert_json_error(answer, 404, "no-such-class")


def test_vnc_live_view_speaks_rfb(guest: Guest) -> None:
    with socket.create_connection(("127.0.0.1", guest.ports[VNC_PORT]), timeout=10) as vnc:
        assert vnc.recv(12).startswith(b"RFB ")


# Files


def test_upload_then_file_returns_the_same_bytes(guest: Guest) -> None:
    payload = os.urandom(3 * 1024 * 1024 + 7)
    path = f"{unique_dir()}/nested/data.bin"  # parent folders are created
    answer = guest.http.post(
        "/setup/upload",
        data={"file_path": path},
        files={"file_data": ("data.bin", payload)},
    )
    assert answer.status_code == 200, answer.text
    fetched = guest.http.post("/file", data={"file_path": path})
    assert fetched.status_code == 200
    assert fetched.content == payload


def test_upload_expands_home(guest: Guest) -> None:
    name = f"home-{uuid.uuid4().hex[:8]}.txt"
    answer = guest.http.post(
        "/setup/upload",
        data={"file_path": f"~/{name}"},
        files={"file_data": (name, b"at home")},
    )
    assert answer.status_code == 200, answer.text
    assert guest.run_ok(["cat", f"/home/user/{name}"]) == "at home"


def test_file_and_upload_bad_requests(guest: Guest) -> None:
    assert_json_error(
        guest.http.post("/file", data={"file_path": "/no/such/file"}),
        404,
        "/no/such/file",
    )
    assert_json_error(guest.http.post("/file"), 400, "file_path")
    assert_json_error(guest.http.post("/file", data={"file_path": "/home/user"}), 400, "directory")
    assert_json_error(guest.http.post("/file", data={"file_path": "/root/secret"}), 403)
    no_file = guest.http.post("/setup/upload", data={"file_path": "/tmp/x"})
    assert_json_error(no_file, 400, "file_data")
    no_path = guest.http.post("/setup/upload", files={"file_data": ("x", b"x")})
    assert_json_error(no_path, 400, "file_path")
    forbidden = guest.http.post("/setup/upload", data={"file_path": "/root/x"}, files={"file_data": ("x", b"x")})
    assert_json_error(forbidden, 403)


def test_list_directory_gives_the_tree(guest: Guest) -> None:
    base = unique_dir()
    guest.run_ok(f"mkdir -p {base}/a/b && touch {base}/a/one.txt {base}/top.txt", shell=True)
    answer = guest.http.post("/list_directory", json={"path": base})
    assert answer.status_code == 200, answer.text
    tree = answer.json()["directory_tree"]
    assert tree["type"] == "directory"
    names = {child["name"]: child for child in tree["children"]}
    assert names["top.txt"] == {"type": "file", "name": "top.txt"}
    assert {c["name"] for c in names["a"]["children"]} == {"b", "one.txt"}
    assert_json_error(guest.http.post("/list_directory", json={}), 400, "path")
    assert_json_error(guest.http.post("/list_directory", json={"path": f"{base}/nope"}), 404)
    assert_json_error(guest.http.post("/list_directory", json={"path": f"{base}/top.txt"}), 400)


def test_download_file_fetches_into_the_guest(guest: Guest) -> None:
    # The source is a web server inside the container itself: test traffic stays local.
    base = unique_dir()
    guest.run_ok(
        f"mkdir -p {base}/site && head -c 200000 /dev/urandom > {base}/site/blob",
        shell=True,
    )
    port = 18765
    launched = guest.http.post(
        "/setup/launch",
        json={
            "command": f"cd {base}/site && exec python3 -m http.server {port} --bind 127.0.0.1",
            "shell": True,
        },
    )
    assert launched.status_code == 200, launched.text
    wait_for(
        lambda: guest.execute(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{port}/blob"])["returncode"] == 0,
        "the web server in the guest",
        timeout=30,
        every=0.1,
    )
    target = f"{base}/downloaded/blob"
    answer = guest.http.post(
        "/setup/download_file",
        json={"url": f"http://127.0.0.1:{port}/blob", "path": target},
    )
    assert answer.status_code == 200, answer.text
    original = guest.http.post("/file", data={"file_path": f"{base}/site/blob"}).content
    assert guest.http.post("/file", data={"file_path": target}).content == original
    assert_json_error(guest.http.post("/setup/download_file", json={"path": target}), 400, "url")
    bad_scheme = guest.http.post("/setup/download_file", json={"url": "ftp://x/y", "path": target})
    assert_json_error(bad_scheme, 400, "url")


# Commands


def test_execute_list_returns_output_error_and_returncode(guest: Guest) -> None:
    result = guest.execute(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert result == {
        "status": "success",
        "output": "out\n",
        "error": "err\n",
        "returncode": 3,
    }


def test_execute_string_without_shell_is_split(guest: Guest) -> None:
    assert guest.execute("printf '%s|' 'a b' c")["output"] == "a b|c|"


def test_execute_with_shell(guest: Guest) -> None:
    result = guest.execute("echo $HOME && echo piped | tr a-z A-Z", shell=True)
    assert result["output"] == "/home/user\nPIPED\n"


def test_execute_expands_leading_home(guest: Guest) -> None:
    assert guest.execute(["echo", "~/Desktop", "x~/y"])["output"] == "/home/user/Desktop x~/y\n"


def test_execute_also_under_setup(guest: Guest) -> None:
    answer = guest.http.post("/setup/execute", json={"command": ["id", "-un"]})
    assert answer.status_code == 200
    assert answer.json()["output"] == "user\n"


def test_execute_as_the_desktop_user_with_sudo(guest: Guest) -> None:
    assert guest.run_ok(["id", "-un"]) == "user\n"
    assert guest.execute(["sudo", "-n", "true"])["returncode"] == 0
    assert guest.execute("echo password | sudo -S true", shell=True)["returncode"] == 0


def test_execute_returns_even_when_a_background_child_keeps_the_pipe(
    guest: Guest,
) -> None:
    started = time.monotonic()
    result = guest.execute("sleep 60 & echo left-running", shell=True)
    assert result["output"] == "left-running\n"
    assert time.monotonic() - started < 10


def test_execute_bad_requests(guest: Guest) -> None:
    post = guest.http.post
    assert_json_error(post("/execute", content=b"not json"), 400, "JSON")
    assert_json_error(post("/execute", json=["ls"]), 400, "JSON object")
    assert_json_error(post("/execute", json={}), 400, "command")
    assert_json_error(post("/execute", json={"command": 5}), 400, "command")
    assert_json_error(post("/execute", json={"command": ["ls", 5]}), 400, "strings")
    assert_json_error(post("/execute", json={"command": ["ls"], "shell": "yes"}), 400, "shell")
    assert_json_error(post("/execute", json={"command": ["no-such-program"]}), 400, "no-such-program")
    assert_json_error(post("/execute", json={"command": "echo 'unclosed"}), 400, "split")


def test_launch_returns_at_once_and_the_program_runs(guest: Guest) -> None:
    marker = f"launched-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    answer = guest.http.post("/setup/launch", json={"command": ["bash", "-c", f"exec -a {marker} sleep 30"]})
    assert answer.status_code == 200, answer.text
    assert time.monotonic() - started < 5
    wait_for(
        lambda: marker in guest.execute(["ps", "-eo", "args"])["output"], "the launched program", timeout=10, every=0.1
    )
    string_form = guest.http.post("/setup/launch", json={"command": "sleep 1", "shell": True})
    assert string_form.status_code == 200
    assert_json_error(guest.http.post("/setup/launch", json={"command": ["no-such-program"]}), 400)
    assert_json_error(guest.http.post("/setup/launch", json={"shell": True}), 400, "command")


def test_pyautogui_has_no_builtin_delays(guest: Guest) -> None:
    code = "print(pyautogui.PAUSE, pyautogui.MINIMUM_DURATION, pyautogui.MINIMUM_SLEEP, pyautogui.DARWIN_CATCH_UP_TIME)"
    result = guest.pyautogui(code)
    assert result["output"] == "0 0 0 0\n", result
    assert result["error"] == ""


# Windows and errors


def test_window_endpoints_need_a_name(guest: Guest) -> None:
    for route in ("/setup/activate_window", "/setup/close_window"):
        assert_json_error(guest.http.post(route, json={}), 400, "window_name")
        assert_json_error(
            guest.http.post(route, json={"window_name": "x", "strict": "no"}),
            400,
            "strict",
        )


def test_activating_a_missing_window_answers_200_as_upstream(guest: Guest) -> None:
    answer = guest.http.post("/setup/activate_window", json={"window_name": "No Such Window 42"})
    assert answer.status_code == 200
    assert "No window" in answer.text


def test_open_file_of_a_missing_path_is_404(guest: Guest) -> None:
    answer = guest.http.post("/setup/open_file", json={"path": "/home/user/missing-file.xlsx"})
    assert_json_error(answer, 404, "missing-file.xlsx")
    assert_json_error(guest.http.post("/setup/open_file", json={}), 400, "path")
    bad_timeout = guest.http.post("/setup/open_file", json={"path": "/etc/hostname", "timeout_seconds": "soon"})
    assert_json_error(bad_timeout, 400, "timeout_seconds")


def test_unknown_routes_and_methods_answer_json(guest: Guest) -> None:
    assert_json_error(guest.http.get("/no-such-endpoint"), 404)
    assert_json_error(guest.http.get("/execute"), 405)


def test_error_bodies_are_json_objects(guest: Guest) -> None:
    answer = guest.http.post("/list_directory", content=b"{broken")
    assert answer.headers["content-type"].startswith("application/json")
    assert json.loads(answer.text)["status"] == "error"


@pytest.mark.parametrize("route", ["/start_recording", "/end_recording"])
def test_recording_routes_exist(guest: Guest, route: str) -> None:
    # Full behaviour is in test_guest_desktop; here only that they are routed for POST.
    assert guest.http.get(route).status_code == 405
