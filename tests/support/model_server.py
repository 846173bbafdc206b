"""A real local model server with scripted answers, for tests.

It speaks the OpenAI-compatible API (``GET /v1/models``, ``POST /v1/chat/completions``, ``POST
/v1/responses``) and the Anthropic API (``GET /v1/models``, ``GET /v1/models/{id}``, ``POST /v1/messages``) on 127.0.0.1,
on an ephemeral port, one thread per connection. Each model has a queue of behaviours, played one
per completion request: a text answer with its token usage, an empty answer, an HTTP status (with
``Retry-After``), a hung connection, a dropped connection, malformed JSON, a whole JSON body (``Json``:
the native protocols' test servers build theirs, tests/support/native_script.py). Every request is recorded,
so a test can assert what the model saw (texts, images, headers).

Use it as a context manager or through the ``model_server`` fixture (import the fixture into a
``conftest.py``)::

    with ModelServer(models=["m"]) as server:
        server.script("m", Reply("```python\\npyautogui.click(1, 2)\\n```"), Status(429, retry_after=0))
        settings = Settings(**server.settings("openai", "m"))
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

Api = Literal["openai", "anthropic"]
# The request's protocol: an API above, or OpenAI's Responses API (POST /v1/responses).
Route = Literal["openai", "anthropic", "responses"]


# --- behaviours ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A model answer. ``text=None`` answers with null content (OpenAI) / no blocks (Anthropic)."""

    text: str | None = ""
    prompt_tokens: int = 10
    completion_tokens: int = 5
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Status:
    """An HTTP error status with a JSON error body (or ``body`` as given) and an optional Retry-After."""

    status: int
    body: str | dict[str, Any] | None = None
    retry_after: float | str | None = None


@dataclass(frozen=True)
class Hang:
    """Read the request, then answer nothing for ``seconds`` (past the client's timeout) and close.

    Server shutdown wakes it at once.
    """

    seconds: float = 60.0


@dataclass(frozen=True)
class Drop:
    """Read the request, then close the connection without any response."""


@dataclass(frozen=True)
class Malformed:
    """A 200 whose body is not valid JSON."""

    body: str = '{"choices": [{"message": {"content": "trunc'


@dataclass(frozen=True)
class Json:
    """An answer whose JSON body is given whole (a native protocol's answer, built by its test server)."""

    body: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


Behaviour = Reply | Status | Hang | Drop | Malformed | Json
Responder = Callable[["RecordedRequest"], Behaviour]


def empty() -> Reply:
    """An empty answer: the model said nothing."""
    return Reply("", completion_tokens=0)


def solution_answers(solution: Iterable[str | dict[str, Any]]) -> list[Reply]:
    """Answers that replay a task's reference solution, one entry per step.

    A code string becomes a fenced python block, a computer_13 dict a fenced json block, and
    ``WAIT``/``DONE``/``FAIL`` the bare word: what the pyautogui or computer_13 runner parses back.
    """
    replies = []
    for entry in solution:
        if isinstance(entry, dict):
            replies.append(Reply(f"```json\n{json.dumps(entry)}\n```"))
        elif entry.strip() in ("WAIT", "DONE", "FAIL"):
            replies.append(Reply(entry.strip()))
        else:
            replies.append(Reply(f"```python\n{entry}\n```"))
    return replies


# --- what the server saw ------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: Any  # decoded JSON, or None
    api: Route | None  # which API the path belongs to; None for the shared model list
    at: float = field(default_factory=time.monotonic)

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def is_completion(self) -> bool:
        return self.method == "POST" and self.api is not None

    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages", []) if isinstance(self.body, dict) else []
        return [m for m in messages if isinstance(m, dict)]

    def texts(self) -> list[str]:
        """Every text the model was shown, system prompt first, in order."""
        found: list[str] = []
        if isinstance(self.body, dict) and isinstance(self.body.get("system"), str):
            found.append(self.body["system"])
        for message in self.messages():
            content = message.get("content")
            if isinstance(content, str):
                found.append(content)
                continue
            for part in content or []:
                if isinstance(part, dict) and part.get("type") == "text":
                    found.append(part.get("text", ""))
        return found

    def text(self) -> str:
        return "\n".join(self.texts())

    def images(self) -> list[bytes]:
        """The decoded bytes of every image the model was shown, in order."""
        found: list[bytes] = []
        for message in self.messages():
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for part in content:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "image_url":  # OpenAI: a data URL
                    url = part.get("image_url", {}).get("url", "")
                    found.append(base64.b64decode(url.split(",", 1)[1]))
                elif part.get("type") == "image":  # Anthropic: a base64 source
                    found.append(base64.b64decode(part.get("source", {}).get("data", "")))
        return found

    def roles(self) -> list[str]:
        return [str(m.get("role")) for m in self.messages()]


# --- the server ---------------------------------------------------------------------------------


class ModelServer:
    """Scripted OpenAI-compatible and Anthropic endpoints on one local port."""

    def __init__(
        self,
        models: Sequence[str] = ("test-model",),
        *,
        api_key: str | None = None,
        aliases: dict[str, str] | None = None,
        models_page_size: int | None = None,
        echo_key: bool = False,
    ) -> None:
        self.models = list(models)
        self.api_key = api_key
        self.aliases = dict(aliases or {})  # alias -> model id, found by GET /v1/models/{alias}
        self.models_page_size = models_page_size  # paginate the Anthropic model list
        self.echo_key = echo_key  # a 401 repeats the key it was given, as careless endpoints do
        self.requests: list[RecordedRequest] = []
        self._queues: dict[str, deque[Behaviour]] = {}
        self._responders: dict[str, Responder] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle

    def start(self) -> Self:
        self._stopping.clear()
        handler = type("Handler", (_Handler,), {"model_server": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False  # a hung handler must not hold up shutdown
        self._httpd = httpd
        # A short poll interval: stop() waits for serve_forever to notice, once per test.
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="model-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- addresses

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the model server is not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return f"{self.base_url}/v1"

    @property
    def anthropic_url(self) -> str:
        return self.base_url

    def url(self, api: Api) -> str:
        return self.openai_url if api == "openai" else self.anthropic_url

    def agent_args(self, model: str = "scripted") -> tuple[str, ...]:
        """The options of a run whose pyautogui agent asks this server (OpenAI's protocol) as ``model``."""
        return ("--osworld-agent", "pyautogui", "--osworld-model-url", self.openai_url, "--osworld-model", model)

    def settings(self, api: Api = "openai", model: str | None = None, **extra: Any) -> dict[str, Any]:
        """Settings values that point a run at this server (pass to ``Settings(**...)``)."""
        return {"model_url": self.url(api), "model": model or self.models[0], "model_api": api, **extra}

    # --- scripting

    def script(self, model: str, *behaviours: Behaviour) -> None:
        """Queue behaviours for ``model``'s next completion requests, one per request."""
        with self._lock:
            self._queues.setdefault(model, deque()).extend(behaviours)

    def respond_with(self, model: str, responder: Responder) -> None:
        """Answer ``model``'s requests with ``responder(request)`` once its queue is empty."""
        with self._lock:
            self._responders[model] = responder

    def remaining(self, model: str) -> int:
        with self._lock:
            return len(self._queues.get(model, ()))

    def completions(self, model: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.is_completion and (model is None or r.model == model)]

    # --- used by the handler

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self, request: RecordedRequest) -> Behaviour:
        model = request.model or ""
        with self._lock:
            queue = self._queues.get(model)
            if queue:
                return queue.popleft()
            responder = self._responders.get(model)
        if responder is not None:
            return responder(request)
        # A 400 is not retried: a test whose script ran out fails at once, saying why.
        return Status(400, {"error": {"message": f"no scripted answer left for model {model!r}"}})

    def _authorized(self, headers: dict[str, str], api: Route | None) -> str | None:
        """None when authorized; else the key that was presented (possibly empty)."""
        if self.api_key is None:
            return None
        bearer = headers.get("authorization", "")
        bearer = bearer[7:] if bearer.lower().startswith("bearer ") else ""
        x_key = headers.get("x-api-key", "")
        presented = {"openai": [bearer], "responses": [bearer], "anthropic": [x_key], None: [bearer, x_key]}[api]
        if self.api_key in presented:
            return None
        return next((k for k in presented if k), "")


class _Handler(BaseHTTPRequestHandler):
    model_server: ModelServer
    protocol_version = "HTTP/1.0"  # one request per connection: a dropped one drops nothing else

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        server = self.model_server
        split = urlsplit(self.path)
        path = split.path.rstrip("/")
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        api: Route | None = None
        if path == "/v1/chat/completions":
            api = "openai"
        elif path == "/v1/messages":
            api = "anthropic"
        elif path == "/v1/responses":
            api = "responses"
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = RecordedRequest(method, path, parse_qs(split.query), headers, body, api)
        server._record(request)

        presented = server._authorized(headers, api)
        if presented is not None:
            message = "invalid api key" + (f": {presented}" if server.echo_key and presented else "")
            self._json(401, {"type": "error", "error": {"type": "authentication_error", "message": message}})
            return

        if method == "GET" and path == "/v1/models":
            self._models(request)
        elif method == "GET" and path.startswith("/v1/models/"):
            name = unquote(path.removeprefix("/v1/models/"))
            target = server.aliases.get(name, name)
            if target in server.models:
                self._json(200, _model_entry(target))
            else:
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": f"model: {name}"}})
        elif method == "POST" and api is not None:
            if not isinstance(body, dict):
                self._json(400, {"error": {"message": "the request body is not a JSON object"}})
            elif body.get("model") not in server.models:
                self._json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
            else:
                self._behave(server._next(request), api, body["model"])
        else:
            self._json(404, {"error": {"message": f"no route {method} {path}"}})

    def _models(self, request: RecordedRequest) -> None:
        server = self.model_server
        names = server.models
        after = (request.query.get("after_id") or [""])[0]
        if after in names:
            names = names[names.index(after) + 1 :]
        size = server.models_page_size or len(names) or 1
        page, more = names[:size], len(names) > size
        # One body fits both APIs: OpenAI reads object/data, Anthropic data/has_more/last_id.
        self._json(
            200,
            {
                "object": "list",
                "data": [_model_entry(n) for n in page],
                "has_more": more,
                "first_id": page[0] if page else None,
                "last_id": page[-1] if page else None,
            },
        )

    def _behave(self, behaviour: Behaviour, api: Route, model: str) -> None:
        if isinstance(behaviour, Json):
            self._json(behaviour.status, behaviour.body, behaviour.headers)
        elif isinstance(behaviour, Reply):
            self._json(200, _reply_body(behaviour, api, model))
        elif isinstance(behaviour, Status):
            body = (
                behaviour.body
                if behaviour.body is not None
                else {"error": {"type": "scripted", "message": f"scripted status {behaviour.status}"}}
            )
            headers = {"retry-after": str(behaviour.retry_after)} if behaviour.retry_after is not None else {}
            self._json(behaviour.status, body, headers)
        elif isinstance(behaviour, Malformed):
            self._send(200, behaviour.body.encode(), "application/json")
        elif isinstance(behaviour, Hang):
            self.model_server._stopping.wait(behaviour.seconds)
            self._drop()
        elif isinstance(behaviour, Drop):
            self._drop()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self._send(status, data, "application/json", headers)

    def _send(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (its timeout): nothing to tell it


def _model_entry(name: str) -> dict[str, Any]:
    return {
        "id": name,
        "object": "model",
        "type": "model",
        "display_name": name,
        "owned_by": "tests",
        "created": 0,
        "created_at": "2025-01-01T00:00:00Z",
    }


def _reply_body(reply: Reply, api: Route, model: str) -> dict[str, Any]:
    if api == "responses":
        return {
            "id": "resp_scripted",
            "object": "response",
            "status": "completed",
            "model": model,
            "output": [
                {
                    "type": "message",
                    "id": "msg_scripted",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply.text or "", "annotations": []}],
                }
            ],
            "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens},
        }
    if api == "openai":
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": reply.text}] if reply.text else [],
        "stop_reason": "end_turn" if reply.finish_reason == "stop" else reply.finish_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens},
    }


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A started :class:`ModelServer` serving ``test-model``; stopped after the test."""
    with ModelServer() as server:
        yield server
