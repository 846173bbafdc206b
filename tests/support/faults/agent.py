"""The model of a run under a fault: each task's reference solution, played by the pyautogui runner
through the local model server, with the model's moments on the timeline.

Each task is told apart by its instruction. Its answers are its solution, one per request; a request
that is dropped (the model-endpoint fault) does not use an answer up, so the runner's retry gets it.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tests.support.faults.timeline import Timeline
from tests.support.model_server import Behaviour, Drop, ModelServer, RecordedRequest, Reply, Status, solution_answers

MODEL = "scripted"


@dataclass
class Drops:
    """Drop ``count`` requests of ``task`` in a row, from its request number ``start`` (0-based)."""

    task: str
    start: int
    count: int


@dataclass
class _Task:
    key: str
    instruction: str
    solution: list[Any]
    answers: deque[Reply] = field(default_factory=deque)
    requests: int = 0
    dropped: int = 0


class ScriptedAgent:
    """Answers the model server's requests for ``scripted`` (see the module's docstring)."""

    def __init__(self, server: ModelServer, tasks: dict[str, dict[str, Any]], timeline: Timeline) -> None:
        self.server = server
        self.timeline = timeline
        self.drops: Drops | None = None
        self._lock = threading.Lock()
        self._tasks = [_Task(key, task["instruction"], list(task["solution"])) for key, task in sorted(tasks.items())]
        server.respond_with(MODEL, self._respond)
        self.new_session()

    def args(self) -> tuple[str, ...]:
        return ("--osworld-agent", "pyautogui", "--osworld-model-url", self.server.openai_url, "--osworld-model", MODEL)

    def new_session(self) -> None:
        """Every task's solution from its first step again (a resumed run plays them anew)."""
        with self._lock:
            for task in self._tasks:
                task.answers = deque(solution_answers(task.solution))
                task.requests = 0

    def dropped(self, key: str) -> int:
        with self._lock:
            return next((t.dropped for t in self._tasks if t.key == key), 0)

    def _respond(self, request: RecordedRequest) -> Behaviour:
        text = request.text()
        with self._lock:
            # The longest instruction that the prompt holds: no task's instruction is inside another's.
            matching = [t for t in self._tasks if t.instruction in text]
            if not matching:
                return Status(400, {"error": {"message": "no task's instruction in the prompt"}})
            task = max(matching, key=lambda t: len(t.instruction))
            index = task.requests
            task.requests += 1
            drops = self.drops
            if drops is not None and drops.task == task.key and drops.start <= index < drops.start + drops.count:
                task.dropped += 1
                self.timeline.note("model_request", task.key, f"{index} dropped")
                return Drop()
            self.timeline.note("model_request", task.key, str(index))
            reply = task.answers.popleft() if task.answers else Reply("DONE")
            if reply.text in ("DONE", "FAIL"):
                self.timeline.note("done_answer", task.key)
            return reply
