"""One task item's writer: the store's files plus the Allure steps, bound to the item's run key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_osworld.record import StepRecord, TaskResult
from pytest_osworld.results import allure_report
from pytest_osworld.results.store import RunStore


class EpisodeRecorder:
    """``on_finish`` gets the record once it is written (the plugin keeps it on the task item)."""

    def __init__(self, store: RunStore, key: str, on_finish: Callable[[TaskResult], None] | None = None) -> None:
        self.store = store
        self.key = key
        self.on_finish = on_finish

    @property
    def task_dir(self) -> Path:
        return self.store.task_dir(self.key)

    def step(self, record: StepRecord, screenshot_png: bytes | None = None) -> str | None:
        """Append the step to traj.jsonl, keep its screenshot (by setting) and add its Allure step."""
        name = self.store.write_step(self.key, record, screenshot_png)
        record.screenshot_file = name
        allure_report.step(record, screenshot_png if name else None)
        return name

    def final_screenshot(self, png: bytes) -> str:
        return self.store.write_final_screenshot(self.key, png)

    def model_io(self, obj: Any) -> str | None:
        return self.store.write_model_io(self.key, obj)

    def video(self, mp4: bytes) -> str | None:
        return self.store.write_video(self.key, mp4)

    def finish(self, result: TaskResult) -> Path:
        """Write the record now and hand it on (to the item, where the outcome hooks find it)."""
        path = self.store.write_result(result)
        if self.on_finish is not None:
            self.on_finish(result)
        return path
