"""Small builders for runner tests: a task entry, a screenshot, a runner context."""

from __future__ import annotations

import io
from typing import Any

from PIL import Image

from pytest_osworld.agents.base import Observation, RunnerContext
from pytest_osworld.agents.endpoint import make_model_client
from pytest_osworld.settings import Settings
from pytest_osworld.tasks.model import Task
from pytest_osworld.tasks.readers import TaskEntry
from tests.support.model_server import Api, ModelServer

INSTRUCTION = "Open the file report.txt on the Desktop."


def entry(solution: list[Any] | None = None, task_id: str = "task-1") -> TaskEntry:
    data: dict[str, Any] = {"id": task_id, "instruction": INSTRUCTION, "evaluator": {"func": "exact_match"}}
    if solution is not None:
        data["solution"] = solution
    return TaskEntry(task=Task.model_validate(data), domain="os", origin="tests/tasks.jsonl:1")


def png(size: tuple[int, int] = (1920, 1080), color: tuple[int, int, int] = (40, 90, 160)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def observation(
    step: int = 0, screenshot: bytes | None = None, tree: str | None = None, screen: tuple[int, int] = (1920, 1080)
) -> Observation:
    return Observation(
        instruction=INSTRUCTION,
        screenshot=screenshot if screenshot is not None else png(screen),
        screen_size=screen,
        step=step,
        accessibility_tree=tree,
    )


def context(
    settings: Settings | None = None,
    *,
    solution: list[Any] | None = None,
    server: ModelServer | None = None,
    api: Api = "openai",
    **values: Any,
) -> RunnerContext:
    """A runner context; with a server, the settings point at it and a real client is built."""
    if settings is None:
        if server is not None:
            values = {**server.settings(api), "model_retries": 0, **values}
        settings = Settings(**values)
    model = make_model_client(settings) if server is not None else None
    return RunnerContext(entry=entry(solution), settings=settings, model=model)
