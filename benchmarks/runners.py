"""Each native runner's own time per step, beyond the model's: the screenshot's scaling, the request's
encoding, reading the answer, mapping its actions.

    python benchmarks/runners.py              # 40 steps per runner
    python benchmarks/runners.py -s 100
    python benchmarks/runners.py --guest      # and what the guest's scaling costs the guest (a desktop sandbox)

Each runner plays a step after another against a local model server of its protocol that answers at once
with one click (an instant "model", on loopback); the screen is a 1920x1080 screenshot with the detail of a
real desktop (windows, text, gradients), a different one each step. The model's time is what the model client measured for the
request (``Decision.model_seconds``: sending, waiting, receiving); the runner's overhead is the rest of
``predict``. Target: median <= 20 ms per step.

A runner whose model sees a smaller screen (anthropic-computer: Anthropic's image limits) gets the
screenshot scaled by the guest from the same grab, as the episode asks it (``Runner.screenshot_size``);
the figures give it so. The runner scales it itself when the guest cannot (OSWorld's own guest server):
that figure is printed too, and with ``--guest`` the time the scaling adds to the guest's screenshot.
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' model server

from _common import close_provider, open_provider

from pytest_osworld.agents.base import Observation, RunnerContext
from pytest_osworld.agents.endpoint import make_model_client
from pytest_osworld.agents.native.images import anthropic_size, resize_png
from pytest_osworld.agents.native.loop import NativeRunner
from pytest_osworld.agents.registry import make_runner
from pytest_osworld.guest.client import GuestClient
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.model import Task
from pytest_osworld.tasks.readers import TaskEntry
from tests.support.model_server import Json, ModelServer, RecordedRequest

TARGET_MS = 20.0
SCREEN = (1920, 1080)


def desktop_png(seed: int = 7) -> bytes:
    """A screenshot with a desktop's detail: window frames, bars, lines of text, gradients, icons."""
    rng = random.Random(seed)
    image = Image.new("RGB", SCREEN, (32, 36, 40))
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x, y = rng.randrange(0, 1400), rng.randrange(0, 700)
        w, h = rng.randrange(400, 900), rng.randrange(250, 500)
        draw.rectangle((x, y, x + w, y + h), fill=(245, 245, 245), outline=(120, 120, 120))
        for row in range(18):  # a title bar with a gradient
            draw.line((x, y + row, x + w, y + row), fill=(120 + row, 160 + row, 210))
        for line in range(y + 30, y + h - 10, 16):
            words = " ".join(
                rng.choice(["file", "edit", "view", "total", "=SUM(B2:B5)", "report", "42.5"]) for _ in range(12)
            )
            draw.text((x + 8, line), words, fill=(20, 20, 20))
        for icon in range(8):
            draw.ellipse(
                (x + 10 + 40 * icon, y + h - 40, x + 34 + 40 * icon, y + h - 16), fill=(rng.randrange(256), 90, 150)
            )
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _anthropic(request: RecordedRequest) -> Json:
    call = {
        "type": "tool_use",
        "id": f"toolu_{len(request.body['messages'])}",
        "name": "computer",
        "input": {"action": "left_click", "coordinate": [700, 400]},
    }
    return Json(
        {
            "content": [{"type": "text", "text": "Clicking."}, call],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )


def _openai(request: RecordedRequest) -> Json:
    number = len(request.body["input"])
    call = {
        "type": "computer_call",
        "id": f"cu_{number}",
        "call_id": f"call_{time.monotonic_ns()}",
        "action": {"type": "click", "button": "left", "x": 700, "y": 400},
        "pending_safety_checks": [],
    }
    return Json(
        {
            "id": f"resp_{time.monotonic_ns()}",
            "status": "completed",
            "output": [call],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )


def _chat(content: str | None, tool: bool) -> Any:
    def answer(request: RecordedRequest) -> Json:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool:
            arguments = '{"action": "left_click", "coordinate": [700, 400]}'
            message["tool_calls"] = [
                {
                    "id": f"call_{time.monotonic_ns()}",
                    "type": "function",
                    "function": {"name": "computer", "arguments": arguments},
                }
            ]
        return Json(
            {
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool else "stop"}],
                "usage": {},
            }
        )

    return answer


ANSWERS = {
    "anthropic-computer": _anthropic,
    "openai-computer": _openai,
    "tool-calling": _chat(None, tool=True),
    "uitars": _chat("Thought: Click it.\nAction: click(start_box='(700,400)')", tool=False),
}


def overheads(agent: str, steps: int, screens: list[bytes], *, guest_scales: bool = True) -> list[float]:
    """Milliseconds of each step's ``predict`` beyond the model's time. ``guest_scales``: the observation
    holds the guest's scaling of the screen when the runner asks for one (made here, outside the timing)."""
    with ModelServer(models=["m"]) as server:
        server.respond_with("m", ANSWERS[agent])
        api = "anthropic" if agent == "anthropic-computer" else "openai"
        settings = Settings(model_url=server.url(api), model="m", agent=agent, max_steps=steps + 1)  # type: ignore[arg-type]
        task = Task.model_validate({"id": "bench", "instruction": "Click.", "evaluator": {"func": "exact_match"}})
        entry = TaskEntry(task=task, domain="os", origin="benchmark")
        runner = make_runner(agent, RunnerContext(entry=entry, settings=settings, model=make_model_client(settings)))
        assert isinstance(runner, NativeRunner)
        size = runner.screenshot_size(SCREEN)
        scaled = [resize_png(screen, size) if size and guest_scales else None for screen in screens]
        found = []
        for step in range(steps):
            index = step % len(screens)
            given = scaled[index]
            observation = Observation(
                "Click.", screens[index], SCREEN, step, scaled=(size, given) if size and given else None
            )
            started = time.perf_counter()
            decision = runner.predict(observation)
            wall = time.perf_counter() - started
            if not decision.actions or decision.model_seconds is None:
                raise RuntimeError(f"{agent}: step {step} gave no action ({decision.parse_error})")
            found.append((wall - decision.model_seconds) * 1000)
        runner.close()
    return found


def figures(found: list[float]) -> tuple[float, str]:
    found = found[1:]  # the first step warms the connection and caches
    median = statistics.median(found)
    p90 = statistics.quantiles(found, n=10)[-1]
    return median, f"median {median:6.2f} ms, p90 {p90:6.2f} ms, max {max(found):6.2f} ms"


def guest_figures(steps: int) -> int:
    """The guest's time for a screenshot, and for the screenshot with its scaling, on a desktop sandbox."""
    opened = open_provider(Settings())
    if opened is None:
        return 2
    provider, owner = opened
    try:
        sandbox = provider.start(task_key="bench/screenshots")
        try:
            with GuestClient(sandbox.api_url) as guest:
                guest.wait_ready(time.monotonic() + 120)
                size = anthropic_size(*SCREEN)
                plain, both = [], []
                for _ in range(steps):
                    started = time.perf_counter()
                    guest.screenshot()
                    plain.append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    guest.screenshots(size)
                    both.append((time.perf_counter() - started) * 1000)
        finally:
            sandbox.stop()
    finally:
        close_provider(provider, owner)
    added = statistics.median(both) - statistics.median(plain)
    print(
        f"guest screenshot: median {statistics.median(plain):6.2f} ms; with its {size[0]}x{size[1]} scaling "
        f"{statistics.median(both):6.2f} ms (+{added:.2f} ms, the guest's CPU)"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-s", "--steps", type=int, default=40, help="steps per runner (default 40)")
    parser.add_argument("--guest", action="store_true", help="also time the guest's scaling on a desktop sandbox")
    args = parser.parse_args()
    screens = [desktop_png(seed) for seed in range(3)]  # a new screen each step: nothing is scaled twice
    met = True
    for agent in ANSWERS:
        median, line = figures(overheads(agent, args.steps, screens))
        met = met and median <= TARGET_MS
        print(f"{agent:20s} overhead per step: {line}")
    # The runner's fallback where the guest cannot scale (OSWorld's own guest server): it scales each screen.
    _, line = figures(overheads("anthropic-computer", args.steps, screens, guest_scales=False))
    print(f"{'':20s} anthropic-computer scaling each screen itself (a guest that cannot): {line}")
    print(f"target: median <= {TARGET_MS:.0f} ms per step: {'met' if met else 'NOT met'}")
    return guest_figures(args.steps) if args.guest else 0


if __name__ == "__main__":
    sys.exit(main())
