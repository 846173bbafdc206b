"""GuestClient against real containers of the desktop image."""

from __future__ import annotations

import io
import threading
import time
from typing import Any

import pytest
from PIL import Image

from pytest_osworld.errors import SandboxLost
from pytest_osworld.guest.client import (
    GUEST_COMMAND_LIMIT_S,
    GuestClient,
    GuestRequestError,
    GuestUnreachable,
    Timeouts,
)
from pytest_osworld.sandbox.base import API_PORT, GUEST_PORTS
from tests.support.desktop import LABELS, Desktop, desktop

pytestmark = pytest.mark.docker


def test_observation_endpoints(shared_desktop: Desktop) -> None:
    guest = shared_desktop.client()
    image = Image.open(io.BytesIO(guest.screenshot()))
    assert image.format == "PNG" and image.size == (1920, 1080)
    assert guest.platform() == "Linux"
    assert guest.screen_size() == {"width": 1920, "height": 1080}
    x, y = guest.cursor_position()
    assert 0 <= x < 1920 and 0 <= y < 1080
    assert guest.desktop_path() == "/home/user/Desktop"
    tree = guest.accessibility()
    assert tree is not None and tree.startswith("<")
    assert guest.terminal() is None  # no terminal window is open


def test_files_round_trip_and_missing_file_is_none(shared_desktop: Desktop) -> None:
    guest = shared_desktop.client()
    payload = bytes(range(256)) * 1000
    guest.upload("~/client-test/blob.bin", payload)
    assert guest.file("~/client-test/blob.bin") == payload
    assert guest.file("/home/user/client-test/blob.bin") == payload
    assert guest.file("~/client-test/absent.bin") is None
    tree = guest.list_directory("~/client-test")
    assert tree["children"] == [{"type": "file", "name": "blob.bin"}]
    with pytest.raises(GuestRequestError) as info:
        guest.list_directory("~/no-such-folder")
    assert info.value.status == 404
    assert guest.window_size("no-such-window-class") is None


def test_execute_and_pyautogui(shared_desktop: Desktop) -> None:
    guest = shared_desktop.client()
    result = guest.execute(["bash", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.output, result.error, result.returncode) == ("out\n", "err\n", 3)
    assert guest.execute("echo $HOME", shell=True).output == "/home/user\n"
    moved = guest.run_pyautogui("pyautogui.moveTo(100, 200); print(pyautogui.position())")
    assert moved.returncode == 0, moved.error
    assert guest.cursor_position() == (100, 200)


def test_guest_refusal_is_a_typed_error_with_the_guest_message(shared_desktop: Desktop) -> None:
    guest = shared_desktop.client()
    with pytest.raises(GuestRequestError) as info:
        guest.execute(["no-such-program-here"])
    assert info.value.status == 400
    assert "no such program" in info.value.message
    assert not isinstance(info.value, SandboxLost)  # an answer, not a lost sandbox


def test_execute_waits_longer_than_the_guest_kills_a_command(engine: Any, desktop_ref: str) -> None:
    """A command past the guest's limit ends with the guest's answer, not a client timeout. The guest here
    kills at 5 s (its GUEST_EXECUTE_TIMEOUT_S), the same kill as at its default 120 s; the client keeps its
    default timeouts, which outlast the default limit."""
    assert Timeouts().execute > GUEST_COMMAND_LIMIT_S
    limit = 5.0
    with desktop(engine, desktop_ref, env={"GUEST_EXECUTE_TIMEOUT_S": f"{limit:g}"}) as made:
        guest = made.client()
        started = time.monotonic()
        with pytest.raises(GuestRequestError) as info:
            guest.execute(["sleep", str(int(limit) + 15)])
        waited = time.monotonic() - started
    assert info.value.status == 500
    assert "did not finish" in info.value.message
    assert limit - 1 <= waited < limit + 15, waited


def test_execute_is_never_sent_twice(shared_desktop: Desktop) -> None:
    """A client timeout on /execute is a lost guest, and the command ran exactly once."""
    guest = shared_desktop.client(timeouts=Timeouts(execute=1.0), retry_budget=30.0)
    marker = f"/tmp/once-{time.monotonic_ns()}"
    with pytest.raises(GuestUnreachable) as info:
        guest.execute(["bash", "-c", f"echo start >> {marker}; sleep 3; echo end >> {marker}"])
    assert info.value.reason == "sandbox_lost"
    deadline = time.monotonic() + 30
    while "end" not in (guest.file(marker) or b"").decode():
        assert time.monotonic() < deadline, "the command did not finish"
        time.sleep(0.2)  # poll for the command's end
    content = guest.file(marker)
    assert content is not None and content.decode().split() == ["start", "end"]


def _start_second_server(made: Desktop, pidfile: str) -> None:
    made.container.exec_run(
        [
            "bash",
            "-c",
            f"echo $$ > {pidfile}; GUEST_PORT=5001 PYTHONPATH=/usr/local/lib/pytest-osworld "
            "exec python3 -m guest_server",
        ],
        user="user",
        detach=True,
    )


def test_reads_are_retried_across_a_guest_restart(engine: Any, desktop_ref: str) -> None:
    """The guest server stops and comes back: a read waits it out; /execute does not."""
    ports = {f"{p}/tcp": ("127.0.0.1", None) for p in (*GUEST_PORTS, 5001)}
    container = engine.containers.run(desktop_ref, detach=True, labels=LABELS, ports=ports, shm_size="512m")
    made = Desktop(container, {})
    try:
        made.wait_ready()
        pidfile = "/tmp/second-guest.pid"
        _start_second_server(made, pidfile)
        guest = GuestClient(made.url(5001), retry_budget=60.0)
        made.clients.append(guest)
        guest.wait_ready(time.monotonic() + 60)
        assert guest.platform() == "Linux"

        made.sh(f"kill $(cat {pidfile})")
        down = time.monotonic()

        def restart() -> None:
            time.sleep(2.0)  # the guest stays down a while before it comes back
            _start_second_server(made, pidfile)

        with pytest.raises(GuestUnreachable):
            guest.execute(["true"])  # not retried: fails while the guest is down
        threading.Thread(target=restart, daemon=True).start()
        image = guest.screenshot()  # retried until the guest answers again
        assert image.startswith(b"\x89PNG")
        assert time.monotonic() - down >= 2.0
    finally:
        made.stop()


def test_stopped_container_gives_typed_errors(engine: Any, desktop_ref: str) -> None:
    from tests.support.desktop import start_desktop

    made = start_desktop(engine, desktop_ref)
    try:
        guest = made.client(retry_budget=2.0)
        assert guest.platform() == "Linux"
        made.container.stop(timeout=2)
        for call in (guest.screenshot, lambda: guest.file("/etc/hostname"), lambda: guest.execute(["true"])):
            with pytest.raises(GuestUnreachable) as info:
                call()
            assert isinstance(info.value, SandboxLost)
            assert made.url(API_PORT) in str(info.value)
        with pytest.raises(GuestUnreachable):
            guest.wait_ready(time.monotonic() + 1.0)
    finally:
        made.stop()


def test_wait_ready_and_recording(fresh_desktop: Desktop, tmp_path: Any) -> None:
    guest = fresh_desktop.client()
    guest.wait_ready(time.monotonic() + 30)
    guest.start_recording()
    guest.run_pyautogui("pyautogui.moveTo(300, 300)")
    video = guest.end_recording(tmp_path / "rec" / "recording.mp4")
    assert video.stat().st_size > 0
    assert video.read_bytes()[4:8] == b"ftyp"
