"""Real applications of the desktop image, each test in a fresh container (they change state)."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from typing import Any
from xml.etree import ElementTree

import httpx
import pytest
from PIL import Image

from tests.support.guest_containers import DEVTOOLS_PORT, Guest
from tests.support.polling import wait_for

pytestmark = pytest.mark.docker

CALC = "LibreOffice Calc"
STATE_NS = "https://accessibility.ubuntu.example.org/ns/state"
ATTRIBUTES_NS = "https://accessibility.ubuntu.example.org/ns/attributes"


def calc_cell(guest: Guest, name: str) -> ElementTree.Element | None:
    """A cell of the open spreadsheet, as the accessibility tree shows it."""
    tree = ElementTree.fromstring(guest.http.get("/accessibility").json()["AT"])
    return next((cell for cell in tree.iter("table-cell") if cell.get("name") == name), None)


def test_calc_formula_typed_through_execute(make_guest: Callable[..., Guest]) -> None:
    guest = make_guest()
    answer = guest.http.post("/setup/launch", json={"command": ["libreoffice", "--calc"]})
    assert answer.status_code == 200, answer.text
    title = guest.wait_for_window(CALC)
    activated = guest.http.post("/setup/activate_window", json={"window_name": title, "strict": True})
    assert activated.text == "Window activated successfully"
    assert guest.run_ok(["xdotool", "getactivewindow", "getwindowname"]).strip() == title

    # Calc maps its window before its sheet takes keys: wait for the focused cell A1.
    def a1_has_focus() -> bool:
        cell = calc_cell(guest, "A1")
        return cell is not None and cell.get(f"{{{STATE_NS}}}focused") == "true"

    wait_for(a1_has_focus, "Calc's sheet to take the keyboard focus", timeout=90, every=0.5)

    before = guest.screenshot()
    typed = guest.pyautogui("pyautogui.typewrite('=6*7\\n')")
    assert typed["returncode"] == 0, typed
    wait_for(lambda: guest.screenshot() != before, "the screen to show the typed formula", timeout=30, every=0.1)

    def a1_value_and_formula() -> tuple[str, str] | None:
        cell = calc_cell(guest, "A1")
        if cell is None or cell.text != "42":
            return None
        return cell.text, cell.get(f"{{{ATTRIBUTES_NS}}}Formula", "")

    # An Element with no children is falsy, hence the tuple.
    assert wait_for(a1_value_and_formula, "cell A1 to hold 42", timeout=60, every=0.5) == (
        "42",
        "6*7",
    )


def test_text_editor_opens_a_file_and_types_less_than(
    make_guest: Callable[..., Guest],
) -> None:
    guest = make_guest()
    path = "/home/user/Desktop/notes.txt"
    guest.http.post(
        "/setup/upload",
        data={"file_path": path},
        files={"file_data": ("notes.txt", b"start\n")},
    )
    started = time.monotonic()
    answer = guest.http.post("/setup/open_file", json={"path": path, "timeout_seconds": 60})
    assert answer.status_code == 200, answer.text
    assert time.monotonic() - started < 60
    assert "notes.txt (~/Desktop) - gedit" in guest.window_titles()

    # "<" must not come out as ">" (a keymap quirk of a bare X server).
    # Typed with a small interval: a loaded gedit once saved before the last keys had reached it.
    guest.pyautogui(
        "pyautogui.hotkey('ctrl', 'end'); pyautogui.typewrite('a<b>c', interval=0.05); pyautogui.hotkey('ctrl', 's')"
    )
    saved = wait_for(
        lambda: (text := guest.http.post("/file", data={"file_path": path}).text).endswith("c\n") and text,
        "gedit to save the file with what was typed",
        timeout=30,
        every=0.1,
    )
    # gedit drops the file's last newline while editing and writes one back on save.
    assert saved == "starta<b>c\n"

    size = guest.http.post("/window_size", data={"app_class_name": "gedit"})
    assert size.status_code == 200, size.text
    assert size.json()["width"] > 0 and size.json()["height"] > 0

    closed = guest.http.post("/setup/close_window", json={"window_name": "gedit", "by_class": True})
    assert closed.status_code == 200 and "closed" in closed.text
    wait_for(lambda: not any("gedit" in t for t in guest.window_titles()), "gedit to close", timeout=30, every=0.1)


def test_chrome_devtools_reachable_through_socat_on_9222(
    make_guest: Callable[..., Guest],
) -> None:
    guest = make_guest()
    # Exactly the setup steps OSWorld's Chrome tasks use.
    for command in (
        ["google-chrome", "--remote-debugging-port=1337"],
        ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"],
    ):
        answer = guest.http.post("/setup/launch", json={"command": command, "shell": False})
        assert answer.status_code == 200, answer.text

    def version() -> dict[str, Any] | None:
        try:
            answer = httpx.get(f"{guest.url(DEVTOOLS_PORT)}/json/version", timeout=5)
        except httpx.HTTPError:
            return None
        return answer.json() if answer.status_code == 200 else None

    info = wait_for(version, "Chrome DevTools on the published port 9222", timeout=60, every=0.1)
    assert "Chrome/" in info["Browser"]
    assert info["webSocketDebuggerUrl"].startswith("ws://")
    # Chrome keeps its profile where OSWorld's getters read it.
    guest.wait_for_window("Chromium")
    assert guest.execute(["test", "-d", "/home/user/.config/google-chrome/Default"])["returncode"] == 0


def test_recording_is_a_valid_mp4(make_guest: Callable[..., Guest]) -> None:
    guest = make_guest()
    assert guest.http.post("/end_recording").status_code == 400
    started = guest.http.post("/start_recording")
    assert started.status_code == 200, started.text
    assert started.json()["status"] == "success"
    assert guest.http.post("/start_recording").status_code == 400
    guest.pyautogui("pyautogui.moveTo(100, 100); pyautogui.moveTo(900, 700, duration=1.0)")
    ended = guest.http.post("/end_recording")
    assert ended.status_code == 200, ended.text
    video = ended.content
    assert video[4:8] == b"ftyp"

    # ffprobe of the image judges the bytes that came back.
    path = "/tmp/returned-recording.mp4"
    guest.http.post("/setup/upload", data={"file_path": path}, files={"file_data": ("r.mp4", video)})
    probe = guest.execute(
        [
            "ffprobe",
            "-v",
            "error",
            "-print_format",
            "json",
            "-show_format",
            "-show_streams",
            path,
        ]
    )
    assert probe["returncode"] == 0, probe
    facts = json.loads(probe["output"])
    stream = facts["streams"][0]
    assert (stream["codec_name"], stream["width"], stream["height"]) == (
        "h264",
        1920,
        1080,
    )
    assert float(facts["format"]["duration"]) > 0.5
    assert guest.http.post("/end_recording").status_code == 400


def test_wallpaper_change_then_read_back(make_guest: Callable[..., Guest]) -> None:
    guest = make_guest()
    image = Image.new("RGB", (64, 48), (200, 30, 90))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    path = "/home/user/Pictures/wall.png"
    guest.http.post(
        "/setup/upload",
        data={"file_path": path},
        files={"file_data": ("wall.png", buffer.getvalue())},
    )
    assert guest.http.post("/wallpaper").status_code == 404  # none set yet
    answer = guest.http.post("/setup/change_wallpaper", json={"path": path})
    assert answer.status_code == 200, answer.text
    wallpaper = guest.http.post("/wallpaper")
    assert wallpaper.status_code == 200
    assert wallpaper.content == buffer.getvalue()
    # The root window shows it: openbox draws no background of its own.
    screen = Image.open(io.BytesIO(guest.screenshot())).convert("RGB")
    assert screen.getpixel((1900, 1060)) == (200, 30, 90)
    missing = guest.http.post("/setup/change_wallpaper", json={"path": "/no/such.png"})
    assert missing.status_code == 404
    assert guest.http.post("/setup/change_wallpaper", json={}).status_code == 400


def test_execute_timeout_kills_the_command(make_guest: Callable[..., Guest]) -> None:
    guest = make_guest({"GUEST_EXECUTE_TIMEOUT_S": "2"})
    started = time.monotonic()
    answer = guest.http.post("/execute", json={"command": "echo begun; sleep 300; echo never", "shell": True})
    elapsed = time.monotonic() - started
    assert answer.status_code == 500
    body = answer.json()
    assert body["status"] == "error"
    assert "2 s" in body["message"]
    assert body["output"] == "begun\n"
    assert elapsed < 10
    assert "sleep 300" not in guest.execute(["ps", "-eo", "args"])["output"]


def test_screen_size_is_set_at_container_start(
    make_guest: Callable[..., Guest],
) -> None:
    guest = make_guest({"SCREEN_WIDTH": "1280", "SCREEN_HEIGHT": "800"})
    assert guest.http.post("/screen_size").json() == {"width": 1280, "height": 800}
    assert Image.open(io.BytesIO(guest.screenshot())).size == (1280, 800)


def test_terminal_output_of_gnome_terminal(make_guest: Callable[..., Guest]) -> None:
    guest = make_guest()
    launch = {
        "command": "export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'\n"
        "gnome-terminal --maximize --working-directory=/home/user/",
        "shell": True,
    }
    assert guest.http.post("/setup/launch", json=launch).status_code == 200
    guest.wait_for_window("user@")
    guest.pyautogui("pyautogui.typewrite('echo from-the-terminal\\n')")

    def terminal_text() -> str | None:
        output = guest.http.get("/terminal").json()["output"]
        return output if output and "from-the-terminal\n" in output else None

    assert "from-the-terminal" in wait_for(terminal_text, "the terminal's text", timeout=30, every=0.1)
