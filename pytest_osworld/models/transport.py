"""What every HTTP model client shares: the connection, credentials, retries, error texts.

An endpoint's own client says only how to list models, how to encode a request and how to read
an answer; this module sends them, retries what may succeed when sent again, and turns failures
into :class:`ModelError` / :class:`ModelConfigError` texts that name the URL and never a credential.
"""

from __future__ import annotations

import json
import logging
import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import httpx

from pytest_osworld.models.base import (
    Completion,
    ModelApi,
    ModelClient,
    ModelConfigError,
    ModelError,
    Prices,
    Sampling,
)
from pytest_osworld.models.messages import Message
from pytest_osworld.models.retry import RetryPolicy, is_retryable_status, parse_retry_after
from pytest_osworld.models.secrets import EndpointUrl, Redactor, Secret

logger = logging.getLogger("pytest_osworld.models")

T = TypeVar("T")
CONNECT_TIMEOUT = 30.0
SNIPPET = 300  # characters of an error body worth showing


class BadAnswer(Exception):
    """A 2xx answer that cannot be read (truncated or malformed JSON): worth sending again."""


@dataclass
class RequestFailed(Exception):
    """A request that did not get a usable answer. ``problem`` is already redacted."""

    problem: str
    status: int | None
    attempts: int
    reached: bool  # the server answered at all (False: connection refused, timeout, drop)

    def __str__(self) -> str:
        return self.problem


@dataclass(frozen=True)
class Answer:
    """What an endpoint's answer says, in the neutral form."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None


@dataclass(frozen=True)
class JsonReply:
    """A decoded JSON answer of :meth:`HttpModelClient.send_json`."""

    data: dict[str, Any]
    seconds: float  # wall-clock time of the request, retries and their waits included
    attempts: int


class HttpModelClient(ModelClient):
    """A model endpoint over HTTP (httpx). Subclasses give the wire format."""

    api: ClassVar[ModelApi]

    def __init__(
        self,
        *,
        url: str,
        model: str | None,
        key: Secret | None = None,
        key_env: str | None = None,
        sampling: Sampling | None = None,
        prices: Prices | None = None,
        timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        try:
            self.endpoint = EndpointUrl.parse(url)
        except ValueError as exc:
            raise ModelConfigError(f"model URL is not usable: {exc}; fix --osworld-model-url") from None
        self.model = model or ""
        self.key_env = key_env
        self.sampling = sampling or Sampling()
        self.prices = prices or Prices()
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._key = key
        self._redact = Redactor(key, self.endpoint.username, self.endpoint.password)
        headers = {"accept": "application/json", **self._auth_headers(key)}
        auth = None
        if self.endpoint.username and "authorization" not in {h.lower() for h in headers}:
            # Credentials written into the URL travel as a header: a URL is logged, a header is not.
            password = self.endpoint.password.reveal() if self.endpoint.password else ""
            auth = httpx.BasicAuth(self.endpoint.username.reveal(), password)
        self._http = httpx.Client(
            headers=headers,
            auth=auth,
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
            transport=transport,
            follow_redirects=False,
        )

    # --- what each endpoint says ----------------------------------------------------------------

    @abstractmethod
    def _auth_headers(self, key: Secret | None) -> dict[str, str]:
        """The headers that carry the key (and any fixed headers the API needs)."""

    @abstractmethod
    def _models_path(self) -> str: ...

    @abstractmethod
    def _completion_path(self) -> str: ...

    @abstractmethod
    def _served_models(self) -> list[str]:
        """The model names the endpoint lists (raises :class:`RequestFailed`)."""

    @abstractmethod
    def _payload(self, messages: Sequence[Message], sampling: Sampling) -> dict[str, Any]: ...

    @abstractmethod
    def _read_answer(self, data: Any) -> Answer:
        """The neutral answer of a decoded JSON body (raises :class:`BadAnswer` when it has no such shape)."""

    def _model_exists(self, name: str) -> bool:
        """A last look for a model the list does not show (an alias); False by default."""
        return False

    # --- the interface --------------------------------------------------------------------------

    def check(self) -> None:
        url = self.endpoint.join(self._models_path())
        try:
            served = self._served_models()
        except RequestFailed as exc:
            raise ModelConfigError(self._check_problem(url, exc)) from None
        if not self.model:
            raise ModelConfigError(
                f"no model named for the endpoint {self.endpoint}; set --osworld-model (it serves: {_names(served)})"
            )
        if self.model in served:
            return
        try:
            if self._model_exists(self.model):
                return
        except RequestFailed as exc:
            raise ModelConfigError(self._check_problem(url, exc)) from None
        raise ModelConfigError(
            f"the model endpoint {self.endpoint} does not serve model {self.model!r} "
            f"(it serves: {_names(served)}); set --osworld-model to one of them"
        )

    def complete(self, messages: Sequence[Message], **overrides: Any) -> Completion:
        if not self.model:
            raise ModelError(f"no model named for the endpoint {self.endpoint}; set --osworld-model")
        sampling = self.sampling.merged(overrides)
        payload = self._payload(messages, sampling)
        started = time.monotonic()
        try:
            answer, attempts = self._request(
                "POST", self._completion_path(), json_body=payload, read=self._decode_answer
            )
        except RequestFailed as exc:
            raise self._failure(self._completion_path(), exc) from None
        return Completion(
            text=answer.text,
            usage=self.prices.usage(answer.prompt_tokens, answer.completion_tokens),
            seconds=time.monotonic() - started,
            finish_reason=answer.finish_reason,
            attempts=attempts,
        )

    def describe(self) -> dict[str, Any]:
        return {"api": self.api, "name": self.model, "host": self.endpoint.host}

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={str(self.endpoint)!r}, model={self.model!r})"

    # --- sending --------------------------------------------------------------------------------

    def _get_json(self, path: str, *, params: dict[str, Any] | None = None, retry_unreached: bool = False) -> Any:
        value, _ = self._request("GET", path, params=params, read=_decode_json, retry_unreached=retry_unreached)
        return value

    def _request(
        self,
        method: str,
        path: str,
        *,
        read: Callable[[httpx.Response], T],
        json_body: Any = None,
        params: dict[str, Any] | None = None,
        retry_unreached: bool = True,
        headers: dict[str, str] | None = None,
    ) -> tuple[T, int]:
        """Send until an answer can be read or the retries run out; returns the value and the attempts.

        Retried: 429 and 5xx (a Retry-After is honoured), timeouts, dropped or refused connections
        (unless ``retry_unreached`` is False: a session check should fail fast), unreadable 2xx
        bodies. Any other status ends at once.
        """
        url = self.endpoint.join(path)
        attempt = 0
        while True:
            attempt += 1
            retry_after: float | None = None
            status: int | None = None
            reached = True
            try:
                response = self._http.request(method, url, json=json_body, params=params, headers=headers)
            except httpx.TimeoutException as exc:
                problem, reached = f"no answer within {self.timeout:g} s ({type(exc).__name__})", False
            except httpx.TransportError as exc:
                problem, reached = f"connection failed ({type(exc).__name__}: {exc})", False
            else:
                status = response.status_code
                if response.is_success:
                    try:
                        return read(response), attempt
                    except BadAnswer as exc:
                        problem = f"unreadable answer: {exc}"
                else:
                    problem = f"HTTP {status}: {_error_text(response)}"
                    if not is_retryable_status(status):
                        raise RequestFailed(self._redact(problem), status, attempt, True)
                    retry_after = parse_retry_after(response.headers.get("retry-after"))
            problem = self._redact(problem)
            if attempt > self.retry.retries or (not reached and not retry_unreached):
                raise RequestFailed(problem, status, attempt, reached)
            delay = self.retry.delay(attempt, retry_after)
            logger.warning(
                "model request to %s failed (%s); retry %d of %d in %.1f s",
                url,
                problem,
                attempt,
                self.retry.retries,
                delay,
            )
            if delay > 0:
                self.retry.sleep(delay)

    def _decode_answer(self, response: httpx.Response) -> Answer:
        return self._read_answer(_decode_json(response))

    def _failure(self, path: str, exc: RequestFailed) -> ModelError:
        """The :class:`ModelError` of a request to ``path`` that got no usable answer (already redacted)."""
        url = self.endpoint.join(path)
        if exc.status is not None and not is_retryable_status(exc.status):
            text = f"the model endpoint {url} refused the request: {exc.problem}"
            if exc.status in (401, 403):
                text += f"; {self._key_fix()}"
        else:
            text = f"the model endpoint {url} failed after {exc.attempts} attempt(s): {exc.problem}"
        return ModelError(text, status=exc.status, attempts=exc.attempts)

    # --- raw JSON requests (the native tool protocols) ------------------------------------------
    # A runner that speaks a provider's own tool protocol builds the whole request body itself; it
    # gets the same retries (429, 5xx such as Anthropic's 529 overloaded, with the server's
    # Retry-After), redaction and error texts as ``complete``.

    def completion_path(self) -> str:
        """The path of the endpoint's own chat answer (``chat/completions``, Anthropic's ``messages``)."""
        return self._completion_path()

    def send_json(self, path: str, body: dict[str, Any], *, headers: dict[str, str] | None = None) -> JsonReply:
        """POST ``body`` to ``path`` under the base and return the decoded JSON object of the answer.

        ``headers`` are added to this request only (e.g. a beta flag). Raises :class:`ModelError`
        when the endpoint fails past the retries or refuses the request.
        """
        if not self.model:
            raise ModelError(f"no model named for the endpoint {self.endpoint}; set --osworld-model")
        started = time.monotonic()
        try:
            data, attempts = self._request("POST", path, json_body=body, read=_decode_object, headers=headers)
        except RequestFailed as exc:
            raise self._failure(path, exc) from None
        return JsonReply(data=data, seconds=time.monotonic() - started, attempts=attempts)

    def redact(self, text: str) -> str:
        """``text`` with every credential of this client masked (for texts a runner records)."""
        return self._redact(text)

    # --- messages -------------------------------------------------------------------------------

    def _key_fix(self) -> str:
        if self.key_env:
            return f"check that the environment variable {self.key_env} holds a valid API key for this endpoint"
        return "set --osworld-model-key-env to the name of the environment variable that holds the API key"

    def _check_problem(self, url: str, exc: RequestFailed) -> str:
        if not exc.reached:
            return (
                f"cannot reach the model endpoint {url}: {exc.problem}; "
                "check --osworld-model-url and that the model server is running"
            )
        if exc.status in (401, 403):
            return f"the model endpoint {url} refused the credentials ({exc.problem}); {self._key_fix()}"
        if exc.status == 404:
            return (
                f"the model endpoint {url} has no model list ({exc.problem}); "
                f"check that --osworld-model-url is the API base, e.g. {self._example_url()}"
            )
        return f"the model endpoint {url} did not list its models: {exc.problem}; check --osworld-model-url"

    def _example_url(self) -> str:
        return "http://gpu:8000/v1"


def _decode_object(response: httpx.Response) -> dict[str, Any]:
    data = _decode_json(response)
    if not isinstance(data, dict):
        raise BadAnswer("expected a JSON object")
    return data


def _decode_json(response: httpx.Response) -> Any:
    try:
        return json.loads(response.content)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise BadAnswer(f"not valid JSON ({exc})") from None


def _error_text(response: httpx.Response) -> str:
    """The useful part of an error body: the API's own message when it has one."""
    try:
        data = json.loads(response.content)
    except ValueError:
        data = None
    message: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            message = error.get("message") or error.get("type")
        elif isinstance(error, str):
            message = error
        message = message or data.get("message") or data.get("detail")
    text = message if isinstance(message, str) and message.strip() else response.text
    text = " ".join(text.split())
    if not text:
        return response.reason_phrase or "no details"
    return text if len(text) <= SNIPPET else text[:SNIPPET] + "..."


def _names(names: Sequence[str], limit: int = 20) -> str:
    if not names:
        return "no models"
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def model_ids(data: Any, url: str) -> list[str]:
    """The ids of a model list (``{"data": [{"id": ...}, ...]}``, the shape both APIs share)."""
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise RequestFailed(f"{url} did not answer with a model list ('data' is missing)", 200, 1, True)
    return [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]


def token_count(value: Any) -> int:
    """A token count from an answer's usage; anything but a non-negative integer counts as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
