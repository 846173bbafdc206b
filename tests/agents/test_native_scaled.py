"""A native runner whose model sees a smaller screen asks for that size; the guest's scaling of the same grab
is what its model gets, and a screenshot the guest did not scale is scaled by the runner (no Docker)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from PIL import Image

from pytest_osworld.agents.native.loop import NativeRunner
from tests.agents.native_helpers import SCREEN, observe, png, runner, task, tasks
from tests.support.model_server import ModelServer

# Each runner, the settings it plays under here, and the size its model sees a 1920x1080 screen at.
SCALING = {
    "anthropic-computer": ({}, (1429, 804)),  # Anthropic's image limits
    "openai-computer": ({"screenshot_max_width": 1280}, (1280, 720)),
    "tool-calling": ({"screenshot_max_height": 540}, (960, 540)),
}


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(models=["m"]) as running:
        yield running


def native(agent: str, server: ModelServer, **settings: Any) -> NativeRunner:
    made = runner(agent, server, task("calc-sum-units", tasks()), **settings)
    assert isinstance(made, NativeRunner)
    return made


def size_of(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


@pytest.mark.parametrize("agent", sorted(SCALING))
def test_the_guests_scaling_is_what_the_model_sees_and_the_runner_scales_what_it_did_not(
    server: ModelServer, agent: str
) -> None:
    settings, size = SCALING[agent]
    made = native(agent, server, **settings)
    assert made.screenshot_size(SCREEN) == size  # what the episode asks the guest for

    observed = observe("Sum the units.", 0)
    by_guest = png((200, 30, 30), size)  # told apart from a scaling of the screen by its colour
    view = made.view(replace(observed, scaled=(size, by_guest)))
    assert view.image == by_guest and view.frame.image == size and view.frame.screen == SCREEN

    # Not scaled by the guest (OSWorld's server), or at another size: the runner scales the screen itself.
    for scaled in (None, ((size[0] - 2, size[1]), by_guest)):
        made = native(agent, server, **settings)
        view = made.view(replace(observed, scaled=scaled))
        assert view.image != by_guest and size_of(view.image) == size
        with Image.open(io.BytesIO(view.image)) as image:
            assert image.convert("RGB").getpixel((size[0] // 6, size[1] // 4)) == (40, 90, 160)  # the screen's


def test_a_runner_whose_model_sees_the_screen_as_taken_asks_no_scaling(server: ModelServer) -> None:
    assert native("uitars", server).screenshot_size(SCREEN) is None  # its model's processor resizes it
    assert native("openai-computer", server).screenshot_size(SCREEN) is None  # no max size: the screen's own
    made = native("openai-computer", server)
    observed = observe("Sum the units.", 0)
    assert made.view(observed).image == observed.screenshot == png()
