"""The native runners' coordinate frames and screenshot sizes (no Docker: the real round trip is in
test_native_round_trip.py)."""

from __future__ import annotations

import io
import math

import pytest
from PIL import Image

from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native.images import anthropic_size, fit_size, resize_png, smart_resize, zoom_png
from pytest_osworld.agents.native.loop import _screen_box


@pytest.mark.parametrize(
    ("screen", "size"),
    [((1920, 1080), (1429, 804)), ((1280, 800), (1280, 800)), ((1024, 768), (1024, 768)), ((3840, 2160), (1429, 804))],
)
def test_anthropic_screenshots_fit_its_image_limits_and_keep_the_aspect(
    screen: tuple[int, int], size: tuple[int, int]
) -> None:
    found = anthropic_size(*screen)
    assert found == size
    assert max(found) <= 1568 and found[0] * found[1] <= 1_150_000
    assert abs(found[0] / found[1] - screen[0] / screen[1]) < 0.01


@pytest.mark.parametrize(
    ("screen", "factor", "size"),
    [((1920, 1080), 28, (1092, 1932)), ((1280, 720), 28, (728, 1288)), ((1920, 1080), 32, (1088, 1920))],
)
def test_smart_resize_gives_multiples_of_the_factor_near_the_screen(
    screen: tuple[int, int], factor: int, size: tuple[int, int]
) -> None:
    assert smart_resize(screen[1], screen[0], factor, 100 * 28 * 28, 16384 * 28 * 28) == size


def test_smart_resize_keeps_the_area_within_its_bounds() -> None:
    h, w = smart_resize(2160, 3840, 28, 3136, 1280 * 28 * 28)
    assert h % 28 == 0 and w % 28 == 0 and h * w <= 1280 * 28 * 28
    h, w = smart_resize(50, 80, 28, 100 * 28 * 28, 16384 * 28 * 28)
    assert h * w >= 100 * 28 * 28 and abs(w / h - 80 / 50) < 0.2
    with pytest.raises(ValueError, match="aspect"):
        smart_resize(5, 1200, 28, 3136, 1_000_000)


def test_fit_size_never_enlarges() -> None:
    assert fit_size(1920, 1080, 1280, None) == (1280, 720)
    assert fit_size(1920, 1080, None, None) == (1920, 1080)
    assert fit_size(800, 600, 1280, 1280) == (800, 600)


@pytest.mark.parametrize("image", [(1429, 804), (1932, 1092), (1280, 720), (1920, 1080)])
def test_every_pixel_of_the_models_image_maps_into_the_screen_pixels_it_shows(image: tuple[int, int]) -> None:
    """The scaled pixel x shows the screen's [x*s, (x+1)*s): the click lands on a screen pixel it covers."""
    frame = Frame(screen=(1920, 1080), image=image)
    sx, sy = 1920 / image[0], 1080 / image[1]
    for x in range(image[0]):
        screen_x = frame.to_screen(x, 0)[0]
        assert math.floor(x * sx) <= screen_x <= max(math.floor(x * sx), math.ceil((x + 1) * sx) - 1), x
    for y in range(image[1]):
        screen_y = frame.to_screen(0, y)[1]
        assert math.floor(y * sy) <= screen_y <= max(math.floor(y * sy), math.ceil((y + 1) * sy) - 1), y
    if image == (1920, 1080):
        assert all(frame.to_screen(x, x % 1080) == (x, x % 1080) for x in range(1920))  # exact: the identity


def test_relative_points_cover_the_screen_edge_to_edge() -> None:
    frame = Frame(screen=(1920, 1080), image=(1932, 1092), relative=True)
    assert frame.to_screen(0, 0) == (0, 0)
    assert frame.to_screen(1000, 1000) == (1919, 1079)
    assert frame.to_screen(500, 500) == (960, 540)


def _png(size: tuple[int, int], paint: list[tuple[tuple[int, int, int, int], tuple[int, int, int]]]) -> bytes:
    image = Image.new("RGB", size, (0, 0, 0))
    for box, color in paint:
        image.paste(color, box)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_a_zoom_reads_the_screens_own_pixels_of_the_region() -> None:
    # A 2-pixel checker the scaled screenshot blurs away stays sharp in the zoom.
    screen = Image.new("RGB", (1920, 1080), (0, 0, 0))
    for x in range(100, 140, 2):
        screen.paste((255, 255, 255), (x, 100, x + 1, 140))
    out = io.BytesIO()
    screen.save(out, format="PNG")
    frame = Frame(screen=(1920, 1080), image=(1429, 804))
    region = (100 * 1429 / 1920, 100 * 804 / 1080, 140 * 1429 / 1920, 140 * 804 / 1080)
    box = _screen_box(region, frame)
    assert box == (100, 100, 140, 140)
    zoomed = Image.open(io.BytesIO(zoom_png(out.getvalue(), box, frame.image))).convert("RGB")
    assert zoomed.size == (804, 804)  # fills the display's height, aspect kept
    column = [zoomed.getpixel((x, 400)) for x in range(0, 804, 10)]
    reds = [pixel[0] for pixel in column if isinstance(pixel, tuple)]
    assert max(reds) > 200 and min(reds) < 50  # the stripes are there


def test_resize_keeps_a_screenshot_of_the_right_size_as_it_is() -> None:
    png = _png((64, 48), [((0, 0, 8, 8), (250, 0, 0))])
    assert resize_png(png, (64, 48)) is png
    smaller = Image.open(io.BytesIO(resize_png(png, (32, 24))))
    assert smaller.size == (32, 24) and smaller.format == "PNG"
