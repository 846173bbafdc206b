"""The server side the native protocols' test servers share: requests checked, the task found, its next
turn answered (tests/support/native_script.py plans the turns).

A protocol's server subclasses :class:`ScriptedModel`: how a request is checked (a broken one is
answered 400 with the reason, so a wrong runner fails its test), how it is read, how a turn is written.
The overloaded cases are played here: a first one answered with the protocol's status and a
``Retry-After`` (the retry's delay is noted for the tests), a second one every time.
"""

from __future__ import annotations

import base64
import io
import threading
from typing import Any

from PIL import Image

from tests.support.model_server import Behaviour, RecordedRequest, Status
from tests.support.native_script import Conversation, Fault, Turn, fill, plan


def decode_image(data: str) -> Image.Image:
    """A base64 PNG (or a data URL of one), decoded; raises ValueError when it is not an image."""
    raw = base64.b64decode(data.split(",", 1)[1] if data.startswith("data:") else data, validate=True)
    image = Image.open(io.BytesIO(raw))
    image.load()
    return image


class Conversations:
    """Every task's conversation, found by the instruction the runner sent (thread-safe)."""

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.by_instruction = {fill(t["instruction"]): t for t in tasks}
        self.started: dict[str, Conversation] = {}
        self.lock = threading.RLock()
        self.problems: list[str] = []  # requests answered 400: a test asserts there are none

    def find(self, text: str) -> Conversation | None:
        """The conversation of the task whose instruction ``text`` holds (the longest match)."""
        found = [i for i in self.by_instruction if i in text]
        if not found:
            return None
        task = self.by_instruction[max(found, key=len)]
        with self.lock:
            if task["id"] not in self.started:
                self.started[task["id"]] = Conversation(task["id"], plan(task))
            return self.started[task["id"]]

    def problem(self, text: str) -> str:
        with self.lock:
            self.problems.append(text)
        return text


# --- the server side shared by the protocols --------------------------------------------------------


class Invalid(Exception):
    """A request that breaks the protocol: answered 400 with the reason (a wrong runner fails its test)."""


class ScriptedModel:
    """A test server's responder (``ModelServer.respond_with``): validate, find the task, answer its next turn.

    A protocol subclass says how a request is checked and read, and how a turn is written.
    """

    retry_after = 1.0  # the overloaded case's Retry-After, seconds
    forever_retry_after = 0.2

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.conversations = Conversations(tasks)

    # --- the protocol's part

    def validate(self, request: RecordedRequest) -> None:
        """Raise :class:`Invalid` when the request breaks the protocol's documented shape."""
        raise NotImplementedError

    def conversation(self, request: RecordedRequest) -> Conversation:
        raise NotImplementedError

    def check_answers(self, request: RecordedRequest, conversation: Conversation) -> Image.Image | None:
        """Check the request answers the last turn's calls (raise :class:`Invalid`); the screen it shows."""
        raise NotImplementedError

    def render(self, turn: Turn, conversation: Conversation) -> Behaviour:
        raise NotImplementedError

    def overloaded(self, forever: bool) -> Status:
        raise NotImplementedError

    # --- every request

    def __call__(self, request: RecordedRequest) -> Behaviour:
        try:
            self.validate(request)
            conversation = self.conversation(request)
            with self.conversations.lock:
                return self._answer(request, conversation)
        except Invalid as exc:
            problem = self.conversations.problem(str(exc))
            return Status(400, {"error": {"type": "invalid_request_error", "message": problem}})
        except Exception as exc:  # noqa: BLE001 - a fault of the script itself: said, never a dropped connection
            problem = self.conversations.problem(f"the test server failed: {type(exc).__name__}: {exc}")
            return Status(400, {"error": {"type": "test_server_error", "message": problem}})

    def _answer(self, request: RecordedRequest, conversation: Conversation) -> Behaviour:
        waited = conversation.notes.pop("overloaded_at", None)
        if waited is not None:
            conversation.notes["retried_after"] = request.at - waited
        screen = self.check_answers(request, conversation)
        turn = conversation.next_turn(screen)
        first = turn[0]
        if isinstance(first, Fault) and first.kind in ("overloaded", "overloaded_forever"):
            forever = first.kind == "overloaded_forever"
            if not forever:
                conversation.notes["overloaded_at"] = request.at
            else:
                conversation.index -= 1  # the same fault again, every time
            conversation.notes["overloaded"] = conversation.notes.get("overloaded", 0) + 1
            return self.overloaded(forever)
        conversation.answered += 1
        if isinstance(first, Fault) and first.kind in ("refusal", "cut"):
            conversation.dropped += 1
        return self.render(turn, conversation)
