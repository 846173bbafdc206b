"""The coordinate round trip on a real desktop: a click the model places on a pixel of the screenshot it was
shown lands on the matching pixel of the real screen, for every native runner's frame.

Known targets (small squares of distinct colours) are drawn on the desktop's wallpaper. Each runner makes
its screenshot of the real screen as it would send it; the "model" picks the pixel at the centre of each
target in that screenshot; the runner's own parser and mapping turn the pick into the pyautogui code the
guest runs; the guest's pointer then says where the click landed.
"""

from __future__ import annotations

import io
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from PIL import Image

from pytest_osworld.agents.base import Observation, RunnerContext
from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.endpoint import make_model_client
from pytest_osworld.agents.native.actions import GuiCall, to_code
from pytest_osworld.agents.native.computer_tool import parse_computer_input
from pytest_osworld.agents.native.loop import NativeRunner
from pytest_osworld.agents.native.openai_computer import parse_cua_action
from pytest_osworld.agents.native.uitars_grammar import parse_call
from pytest_osworld.agents.registry import make_runner
from pytest_osworld.guest.client import GuestClient
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.model import Task
from pytest_osworld.tasks.readers import TaskEntry
from tests.support.guest_containers import GUEST_PORT, Guest

pytestmark = pytest.mark.docker

SCREEN = (1920, 1080)
HALF = 5  # a target is the 11x11 square around its point
TARGETS = {
    (37, 41): (255, 0, 0),
    (1882, 1046): (0, 255, 0),
    (960, 540): (0, 0, 255),
    (701, 333): (255, 255, 0),
    (1501, 203): (255, 0, 255),
    (250, 900): (0, 255, 255),
}
POINTER_REST = (1200, 700)  # far from every target
# Each runner's frame (the settings that make it) and how its model writes a click at a point.
Click = Callable[[int, int, Frame], GuiCall]
RUNNERS: list[tuple[str, dict[str, Any], Click]] = [
    (
        "anthropic-computer",
        {},
        lambda x, y, f: parse_computer_input({"action": "left_click", "coordinate": [x, y]}, f, zoom=False),
    ),
    ("openai-computer", {}, lambda x, y, f: parse_cua_action({"type": "click", "button": "left", "x": x, "y": y}, f)),
    (
        "openai-computer",
        {"screenshot_max_width": 1280},
        lambda x, y, f: parse_cua_action({"type": "click", "x": x, "y": y}, f),
    ),
    (
        "tool-calling",
        {"relative_coordinates": True},
        lambda x, y, f: parse_computer_input({"action": "left_click", "coordinate": [x, y]}, f, zoom=True),
    ),
    ("uitars", {}, lambda x, y, f: _uitars(x, y, f)),
    ("uitars", {"uitars_coordinates": "relative", "uitars_factor": 32}, lambda x, y, f: _uitars(x, y, f)),
]


def _uitars(x: int, y: int, frame: Frame) -> GuiCall:
    call = parse_call(f"click(start_box='<|box_start|>({x},{y})<|box_end|>')", frame).call
    assert call is not None
    return call


def _wallpaper() -> bytes:
    image = Image.new("RGB", SCREEN, (0, 0, 0))
    for (x, y), color in TARGETS.items():
        image.paste(color, (x - HALF, y - HALF, x + HALF + 1, y + HALF + 1))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _centre(image: Image.Image, color: tuple[int, int, int]) -> tuple[float, float]:
    """Where ``color`` is in ``image``: the centre of the pixels closest to it (resampling blurs the edges)."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.int16)
    distance = np.abs(pixels - np.array(color)).sum(axis=2)
    ys, xs = np.nonzero(distance <= distance.min() + 60)
    return float(xs.mean()), float(ys.mean())


def _runner(agent: str, settings: dict[str, Any]) -> NativeRunner:
    values = Settings(model_url="http://127.0.0.1:9/v1", model="m", agent=agent, **settings)
    task = Task.model_validate({"id": "t", "instruction": "Click the targets.", "evaluator": {"func": "exact_match"}})
    entry = TaskEntry(task=task, domain="os", origin="tests/t.jsonl:1")
    made = make_runner(agent, RunnerContext(entry=entry, settings=values, model=make_model_client(values)))
    assert isinstance(made, NativeRunner)
    return made


def _show_targets(guest: Guest, client: GuestClient) -> bytes:
    path = "/home/user/Pictures/targets.png"
    upload = guest.http.post("/setup/upload", data={"file_path": path}, files={"file_data": ("t.png", _wallpaper())})
    assert upload.status_code == 200, upload.text
    # The pointer starts at the screen's centre, on a target, and screenshots show it: move it off them.
    moved = client.run_pyautogui(f"pyautogui.moveTo({POINTER_REST[0]}, {POINTER_REST[1]})")
    assert moved.returncode == 0, moved
    deadline = time.monotonic() + 60
    asked = 0.0
    while True:  # the root window shows the wallpaper once feh has drawn it
        if time.monotonic() - asked > 5:  # asked again: a desktop still starting may draw its own over it
            assert guest.http.post("/setup/change_wallpaper", json={"path": path}).status_code == 200
            asked = time.monotonic()
        screen = client.screenshot()
        image = Image.open(io.BytesIO(screen)).convert("RGB")
        seen = {point: image.getpixel(point) for point in TARGETS}
        if seen == TARGETS:
            return screen
        assert time.monotonic() < deadline, f"the targets never showed on the screen: {seen} != {TARGETS}"
        time.sleep(0.2)  # readiness poll of the screen


def test_a_click_on_a_pixel_of_the_screenshot_lands_on_that_pixel_of_the_screen(
    make_guest: Callable[..., Guest],
) -> None:
    guest = make_guest()
    with GuestClient(guest.url(GUEST_PORT)) as client:
        screen = _show_targets(guest, client)
        landed_on: dict[str, list[tuple[int, int]]] = {}
        for agent, settings, click in RUNNERS:
            runner = _runner(agent, settings)
            view = runner.view(Observation("Click the targets.", screen, SCREEN, 0, pointer=client.cursor_position))
            frame = view.frame
            shown: Image.Image = Image.open(io.BytesIO(view.image))
            if agent == "uitars":  # sent as taken: the model's image processor resizes it (smart_resize)
                shown = shown.convert("RGB").resize(frame.image, Image.Resampling.BICUBIC)
            assert shown.size == frame.image
            sx, sy = SCREEN[0] / frame.image[0], SCREEN[1] / frame.image[1]
            for (x, y), color in TARGETS.items():
                cx, cy = _centre(shown, color)
                pixel = (round(cx), round(cy))  # the pixel of the screenshot the model clicks
                point = (
                    (round(pixel[0] * 1000 / frame.image[0]), round(pixel[1] * 1000 / frame.image[1]))
                    if frame.relative
                    else pixel
                )
                code = to_code(click(*point, frame), frame)
                assert code is not None
                result = client.run_action(code, 30)
                assert result.returncode == 0, result.error
                landed = client.cursor_position()
                assert landed == frame.to_screen(*point), (agent, settings)
                assert abs(landed[0] - x) <= HALF and abs(landed[1] - y) <= HALF, (agent, settings, color, landed)
                if not frame.relative:
                    # The very pixel: the screen pixel the clicked screenshot pixel was made from.
                    assert (
                        math.floor(pixel[0] * sx)
                        <= landed[0]
                        <= max(math.floor(pixel[0] * sx), math.ceil((pixel[0] + 1) * sx) - 1)
                    )
                    assert (
                        math.floor(pixel[1] * sy)
                        <= landed[1]
                        <= max(math.floor(pixel[1] * sy), math.ceil((pixel[1] + 1) * sy) - 1)
                    )
                landed_on.setdefault(f"{agent} {settings}", []).append(landed)
        # Unscaled, the round trip is the identity: every click lands exactly on the target's own pixel.
        assert landed_on["openai-computer {}"] == list(TARGETS)
        # The model's cursor_position answer reads the pointer back in its own frame.
        anthropic = _runner("anthropic-computer", {})
        view = anthropic.view(Observation("x", screen, SCREEN, 0, pointer=client.cursor_position))
        client.run_action("pyautogui.moveTo(960, 540)", 30)
        assert view.frame.to_model(*client.cursor_position()) == (714, 402)
