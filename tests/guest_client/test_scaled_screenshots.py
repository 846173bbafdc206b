"""A screenshot and its scaling from one grab (``GuestClient.screenshots``): the desktop image's guest
scales it; OSWorld's own guest server has no such route and the client falls back to the plain one."""

from __future__ import annotations

import io
import json
from http.server import BaseHTTPRequestHandler
from typing import cast

import httpx
import pytest
from PIL import Image, ImageChops

from pytest_osworld.guest.client import GuestClient
from tests.support.desktop import Desktop
from tests.support.loopback import loopback_http

SIZE = (1429, 804)  # what the anthropic-computer runner asks of a 1920x1080 screen


def image(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as opened:
        assert opened.format == "PNG"
        return opened.convert("RGB")


@pytest.mark.docker
def test_the_guest_scales_the_grab_to_the_size_asked(shared_desktop: Desktop) -> None:
    guest = shared_desktop.client()
    guest.run_pyautogui("pyautogui.moveTo(700, 400)")  # the pointer is drawn in both
    full, scaled = guest.screenshots(SIZE)
    assert scaled is not None
    screen, small = image(full), image(scaled)
    assert screen.size == (1920, 1080) and small.size == SIZE
    # The screen's own pixels, scaled as the runner would scale them (the guest's Pillow may round apart
    # by a level).
    ours = screen.resize(SIZE, Image.Resampling.BILINEAR)
    _, worst = cast(tuple[int, int], ImageChops.difference(ours, small).convert("L").getextrema())
    assert worst <= 2, worst
    # The size of the screen itself is sent once, not scaled.
    same, again = guest.screenshots((1920, 1080))
    assert again == same

    # A bad size is the guest's clear refusal, never a traceback.
    http = httpx.Client(base_url=guest.base_url, trust_env=False, timeout=30)
    queries: list[tuple[dict[str, str], str]] = [
        ({"height": "10"}, "'width'"),
        ({"width": "wide", "height": "10"}, "whole number"),
        ({"width": "0", "height": "10"}, "1 to 8192 pixels"),
        ({"width": "10", "height": "100000"}, "1 to 8192 pixels"),
    ]
    for query, words in queries:
        answer = http.get("/screenshot/scaled", params=query)
        assert answer.status_code == 400 and words in answer.json()["message"], answer.text
        assert "Traceback" not in answer.text


class _UpstreamGuest(BaseHTTPRequestHandler):
    """OSWorld's guest server as far as screenshots go: ``/screenshot`` only; any other route is a 404."""

    asked: list[str]

    def do_GET(self) -> None:
        self.asked.append(self.path)
        if self.path == "/screenshot":
            out = io.BytesIO()
            Image.new("RGB", (1920, 1080), (10, 20, 30)).save(out, format="PNG")
            body, kind, status = out.getvalue(), "image/png", 200
        else:
            body, kind, status = json.dumps({"error": "Not Found"}).encode(), "application/json", 404
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_guest_without_the_route_gives_the_screen_and_is_not_asked_again() -> None:
    asked: list[str] = []
    handler = type("Handler", (_UpstreamGuest,), {"asked": asked})
    with loopback_http(handler) as url, GuestClient(url, retry_budget=1.0) as guest:
        for _ in range(3):
            full, scaled = guest.screenshots(SIZE)
            assert scaled is None and image(full).size == (1920, 1080)
    assert [path.split("?")[0] for path in asked] == ["/screenshot/scaled", "/screenshot", "/screenshot", "/screenshot"]
