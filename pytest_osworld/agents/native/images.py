"""Screenshots as each native protocol's model expects them: the size, and the crop of a zoom.

- Anthropic's computer tool: a screenshot is scaled down (never up) so that its long edge is at most
  1568 pixels and it holds at most about 1.15 megapixels, the limits of Anthropic's image input; the
  tool declares that size as the display, and every coordinate the model gives is scaled back.
- Qwen-VL and UI-TARS: ``smart_resize`` (the rule of Qwen's own image processor): both sides a
  multiple of the patch factor (28; 32 for Qwen3-VL), the area within [min_pixels, max_pixels], the
  aspect kept as far as those allow. The screenshot is sent as taken and the model's processor resizes
  it so (as Qwen's own computer-use examples do); the model's absolute coordinates are pixels of that
  size.
"""

from __future__ import annotations

import io
import math

from PIL import Image

from pytest_osworld.agents.base import Observation
from pytest_osworld.agents.native.actions import ActionError

ANTHROPIC_LONG_EDGE = 1568
ANTHROPIC_PIXELS = 1_150_000
PNG_LEVEL = 1  # zlib level of the PNGs sent: screens compress well at 1, and level 6 costs tens of ms


def anthropic_size(width: int, height: int) -> tuple[int, int]:
    """The screenshot size Anthropic's image limits leave for a ``width`` x ``height`` screen."""
    scale = min(1.0, ANTHROPIC_LONG_EDGE / max(width, height), math.sqrt(ANTHROPIC_PIXELS / (width * height)))
    return max(1, int(width * scale)), max(1, int(height * scale))


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen-VL's ``smart_resize``: (height, width), each a multiple of ``factor``, area within the bounds."""
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"a {width}x{height} screen is too narrow for the image processor (aspect over 200)")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def png_size(png: bytes) -> tuple[int, int] | None:
    """The size of a PNG from its header (nothing decoded); None when it is not an image."""
    try:
        with Image.open(io.BytesIO(png)) as image:
            return image.size
    except (OSError, ValueError):
        return None


def resize_png(png: bytes, size: tuple[int, int]) -> bytes:
    """``png`` at exactly ``size`` (returned as it is when it already has it)."""
    with Image.open(io.BytesIO(png)) as image:
        if image.size == size:
            return png
        # Bilinear with PIL's scaled support is antialiased when shrinking, at half Lanczos's time.
        resized = image.convert("RGB").resize(size, Image.Resampling.BILINEAR)
    return encode_png(resized)


def screenshot_at(observation: Observation, size: tuple[int, int]) -> bytes:
    """The observation's screenshot at ``size``: the guest's scaling of the same grab when it made one
    at that size, else scaled here."""
    if observation.scaled is not None and observation.scaled[0] == size:
        return observation.scaled[1]
    if observation.screen_size == size:
        return observation.screenshot
    return resize_png(observation.screenshot, size)


def encode_png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=PNG_LEVEL)
    return out.getvalue()


def zoom_png(png: bytes, box: tuple[int, int, int, int], fit: tuple[int, int]) -> bytes:
    """The screen rectangle ``box`` (left, top, right, bottom; screen pixels, right and bottom excluded)
    of the full screenshot ``png``, scaled to fill ``fit`` with its aspect kept: a closer look at
    the region, read from the screen's own pixels rather than the scaled screenshot's."""
    left, top, right, bottom = box
    if right <= left or bottom <= top:
        raise ActionError(f"the zoom region is empty on the screen ({left}, {top}, {right}, {bottom})")
    with Image.open(io.BytesIO(png)) as image:
        crop = image.convert("RGB").crop(box)
    scale = min(fit[0] / crop.width, fit[1] / crop.height)
    size = (max(1, round(crop.width * scale)), max(1, round(crop.height * scale)))
    return encode_png(crop.resize(size, Image.Resampling.LANCZOS))


def fit_size(width: int, height: int, max_width: int | None, max_height: int | None) -> tuple[int, int]:
    """``width`` x ``height`` shrunk to fit the bounds given (aspect kept, never enlarged)."""
    scale = min((max_width / width) if max_width else 1.0, (max_height / height) if max_height else 1.0, 1.0)
    return max(1, round(width * scale)), max(1, round(height * scale))
