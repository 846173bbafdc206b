"""Each native runner's own time per step, beyond the model's: the screenshot's scaling, the request's
encoding, reading the answer, mapping its actions.

    python benchmarks/runners.py              # 40 steps per runner
    python benchmarks/runners.py -s 100

Each runner plays a step after another against a local model server of its protocol that answers at once
with one click (an instant "model", on loopback); the screen is a 1920x1080 screenshot with the detail of a
real desktop (windows, text, gradients), a different one each step. The model's time is what the model client measured for the
request (``Decision.model_seconds``: sending, waiting, receiving); the runner's overhead is the rest of
``predict``. Target: median <= 20 ms per step.
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

from pytest_osworld.agents.base import Observation, RunnerContext
from pytest_osworld.agents.native.images import anthropic_size, resize_png
from pytest_osworld.agents.registry import make_runner
from pytest_osworld.models import make_model_client
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


def overheads(agent: str, steps: int, screens: list[bytes]) -> list[float]:
    """Milliseconds of each step's ``predict`` beyond the model's time."""
    with ModelServer(models=["m"]) as server:
        server.respond_with("m", ANSWERS[agent])
        api = "anthropic" if agent == "anthropic-computer" else "openai"
        settings = Settings(model_url=server.url(api), model="m", agent=agent, max_steps=steps + 1)  # type: ignore[arg-type]
        task = Task.model_validate({"id": "bench", "instruction": "Click.", "evaluator": {"func": "exact_match"}})
        entry = TaskEntry(task=task, domain="os", origin="benchmark")
        runner = make_runner(agent, RunnerContext(entry=entry, settings=settings, model=make_model_client(settings)))
        found = []
        for step in range(steps):
            observation = Observation("Click.", screens[step % len(screens)], SCREEN, step)
            started = time.perf_counter()
            decision = runner.predict(observation)
            wall = time.perf_counter() - started
            if not decision.actions or decision.model_seconds is None:
                raise RuntimeError(f"{agent}: step {step} gave no action ({decision.parse_error})")
            found.append((wall - decision.model_seconds) * 1000)
        runner.close()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-s", "--steps", type=int, default=40, help="steps per runner (default 40)")
    args = parser.parse_args()
    screens = [desktop_png(seed) for seed in range(3)]  # a new screen each step: nothing is scaled twice
    met = True
    for agent in ANSWERS:
        found = overheads(agent, args.steps, screens)[1:]  # the first step warms the connection and caches
        median = statistics.median(found)
        p90 = statistics.quantiles(found, n=10)[-1]
        met = met and median <= TARGET_MS
        print(f"{agent:20s} overhead per step: median {median:6.2f} ms, p90 {p90:6.2f} ms, max {max(found):6.2f} ms")
    # The one piece of work a protocol demands of its runner: Anthropic's screenshots scaled to its limits.
    scaling = []
    for step in range(args.steps):
        started = time.perf_counter()
        resize_png(screens[step % len(screens)], anthropic_size(*SCREEN))
        scaling.append((time.perf_counter() - started) * 1000)
    print(
        f"{'':20s} of which anthropic-computer's screenshot scaling (decode, resize, PNG): median "
        f"{statistics.median(scaling):6.2f} ms"
    )
    print(f"target: median <= {TARGET_MS:.0f} ms per step: {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
