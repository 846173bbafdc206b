"""Building native runners against the local protocol servers, and feeding them observations."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from PIL import Image

from pytest_osworld.agents.base import Decision, Observation, Runner, RunnerContext
from pytest_osworld.agents.endpoint import make_model_client
from pytest_osworld.agents.registry import make_runner
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.model import Task
from pytest_osworld.tasks.readers import TaskEntry
from tests.support.model_server import Api, ModelServer
from tests.support.native_script import bundled_v1_tasks, case_tasks

SCREEN = (1920, 1080)


def tasks(*cases: str) -> list[dict[str, Any]]:
    return bundled_v1_tasks() + case_tasks("os-refresh-rate", cases)


def task(task_id: str, every: list[dict[str, Any]]) -> dict[str, Any]:
    return next(t for t in every if t["id"] == task_id)


def runner(
    agent: str, server: ModelServer, task_json: dict[str, Any], *, asks_user: bool = False, **settings: Any
) -> Runner:
    api: Api = "anthropic" if agent == "anthropic-computer" else "openai"
    given = {"model_url": server.url(api), "model": server.models[0], "agent": agent, "model_retries": 0}
    values = Settings(**{**given, "model_backoff": 0, **settings})
    entry = TaskEntry(task=Task.model_validate(task_json), domain="os", origin="tests/tasks.jsonl:1")
    return make_runner(
        agent, RunnerContext(entry=entry, settings=values, model=make_model_client(values), asks_user=asks_user)
    )


def png(color: tuple[int, int, int] = (40, 90, 160), size: tuple[int, int] = SCREEN, terminal: bool = False) -> bytes:
    """A screen with a few coloured panes (not blank); with ``terminal``, a focused window's title bar
    (openbox's blue) in the middle."""
    image = Image.new("RGB", size, color)
    width, height = size
    for n, pane in enumerate(((230, 230, 230), (90, 160, 90), (200, 120, 40))):
        image.paste(pane, (n * width // 3, height // 2, (n + 1) * width // 3, height))
    if terminal:
        image.paste((140, 177, 221), (int(0.31 * width), int(0.28 * height), int(0.69 * width), int(0.295 * height)))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def observe(
    instruction: str,
    step: int,
    *,
    terminal: bool = False,
    pointer: Callable[[], tuple[int, int]] | None = None,
    note: str | None = None,
) -> Observation:
    return Observation(
        instruction=instruction,
        screenshot=png(terminal=terminal),
        screen_size=SCREEN,
        step=step,
        pointer=pointer,
        note=note,
    )


def play(agent: Runner, instruction: str, steps: int = 40, **observed: Any) -> list[Decision]:
    """Predict until the runner ends the episode (DONE, FAIL or a stop); the decisions in order.

    The desktop is a stand-in for the screen only: ctrl+alt+t shows a terminal's title bar, and typing a
    command that ends with ``exit`` closes it.
    """
    decisions = []
    terminal = False
    for step in range(steps):
        decision = agent.predict(observe(instruction, step, terminal=terminal, **observed))
        decisions.append(decision)
        for action in decision.actions:
            code = action.code or ""
            if "'ctrl', 'alt', 't'" in code:
                terminal = True
            if "exit\\n" in code:
                terminal = False
        if decision.stop or any(a.kind in ("DONE", "FAIL") for a in decision.actions):
            break
    return decisions
