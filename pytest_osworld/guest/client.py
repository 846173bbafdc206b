"""The host-side client of the guest API (docs/desktop-image.md lists it): one sandbox, one client.

Two kinds of failure are kept apart, because they mean different things for a result:

- :class:`GuestUnreachable`: no answer at all (refused, reset, timed out). The sandbox is gone or
  hung; the episode masks it as ``sandbox_lost``.
- :class:`GuestRequestError`: the guest answered with a 4xx/5xx status. It carries the status and the
  guest's own message.

Only calls that can be repeated without changing the guest (reads, uploads of the same bytes) are
retried, within a time budget, across refused connections and 502/503/504 answers. ``/execute``,
``/setup/launch``, ``/setup/open_file`` and the window actions are sent once: running a command
twice is not the same as running it once.

Every timeout is longer than the guest's own limit for that call (the guest kills a command after
120 s), so a slow step ends with the guest's answer, never with the client giving up first.

An agent's action (:meth:`GuestClient.run_action`) is different: whatever it does is the agent's
business, so it always ends with an :class:`ExecResult` (an exit status, an error, a time-out) and
raises only :class:`GuestUnreachable`, when the guest is gone. It is sent again only when the
connection was refused, that is when it never reached the guest.

The desktop's guest server is supervised: killed inside a sandbox that still runs (an agent's
``pkill python3``), it is back within seconds. So a request that finds it gone waits for it, polling
``/platform`` (a readiness check) within the retry budget, and gives up at once when the sandbox
itself is found stopped (``sandbox_alive``). The action whose connection dropped has failed (its
result says so); a call sent once (``/execute``, ``/setup/launch``, ...) that follows a drop waits
for the guest first, and is never sent again after it reached the guest.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, cast

import httpx

from pytest_osworld.errors import OsworldError, SandboxLost

T = TypeVar("T")

GUEST_COMMAND_LIMIT_S = 120.0  # the guest kills a command after this long (GUEST_EXECUTE_TIMEOUT_S)
# How much longer than an action's own time limit the client waits for the guest's answer: the
# guest kills the action at its limit, then reads what is left of its output before answering.
ACTION_ANSWER_GRACE_S = 30.0
PYAUTOGUI_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
TRANSIENT_STATUSES = frozenset({502, 503, 504})
MAX_MESSAGE_CHARS = 500


@dataclass(frozen=True)
class Timeouts:
    """Read timeouts per kind of call, in seconds; each above what the guest itself allows."""

    connect: float = 10.0
    read: float = 120.0  # screenshots and accessibility trees of a busy desktop can take a while
    execute: float = GUEST_COMMAND_LIMIT_S + 60.0
    open_file: float = 300.0  # the guest waits up to 180 s for the window
    download: float = 1000.0  # the guest tries 3 times with 300 s each
    upload: float = 600.0
    recording: float = 120.0


class GuestError(OsworldError):
    """Base of the guest client's errors; ``endpoint`` names the call."""

    def __init__(self, endpoint: str, message: str) -> None:
        super().__init__(message)
        self.endpoint = endpoint


class GuestUnreachable(GuestError, SandboxLost):
    """The guest gave no answer (refused, reset, timed out): the sandbox is lost or hung.

    A :class:`SandboxLost`, so the episode masks it as ``sandbox_lost`` like any lost sandbox.
    """

    reason = "sandbox_lost"

    def __init__(self, endpoint: str, problem: str, base_url: str) -> None:
        super().__init__(
            endpoint,
            f"guest at {base_url} did not answer {endpoint}: {problem}; the sandbox stopped or hung (see its logs)",
        )
        self.problem = problem


class GuestRequestError(GuestError):
    """The guest answered ``status`` (4xx/5xx); ``message`` is its own explanation."""

    reason = "guest_error"

    def __init__(self, endpoint: str, status: int, message: str) -> None:
        super().__init__(endpoint, f"guest answered {status} to {endpoint}: {message}")
        self.status = status
        self.message = message


@dataclass(frozen=True)
class ExecResult:
    """What ``/execute`` answers for a command that ran (whatever its exit status).

    ``timed_out``: the command was killed at its time limit (or, for an action, the guest did not
    answer in time while it still answers other calls).
    """

    output: str
    error: str
    returncode: int
    status: str = "success"
    timed_out: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExecResult:
        return cls(
            output=data.get("output") or "",
            error=data.get("error") or "",
            # No exit status (a command the guest could not wait for) is not a success.
            returncode=int(data["returncode"]) if data.get("returncode") is not None else -1,
            status=str(data.get("status", "success")),
        )


def _action_failure(error: str, *, timed_out: bool = False, output: str = "") -> ExecResult:
    """An action that did not end with an exit status of its own."""
    return ExecResult(output=output, error=error, returncode=-1, status="error", timed_out=timed_out)


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def guest_message(response: httpx.Response) -> str:
    """The guest's explanation of an error answer: its JSON ``message``/``error``, else its text."""
    text = response.text
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        data = None
    if isinstance(data, dict):
        for key in ("message", "error", "description"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return value[:MAX_MESSAGE_CHARS]
    text = text.strip()
    return (text[:MAX_MESSAGE_CHARS] if text else response.reason_phrase) or f"status {response.status_code}"


class GuestClient:
    """Synchronous client of one guest's API at ``base_url`` (e.g. ``http://127.0.0.1:49153``)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeouts: Timeouts | None = None,
        retry_budget: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        sandbox_alive: Callable[[], bool] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeouts = timeouts or Timeouts()
        self.retry_budget = retry_budget
        # Whether the sandbox still runs (asks its engine, not the guest): a wait for the guest
        # server ends as soon as it says no. None: wait out the budget.
        self.sandbox_alive = sandbox_alive
        self._dropped = False  # the last request found no guest server; the next one waits for it
        self._scales = True  # the guest scales screenshots (``screenshots``) until it answers 404
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=httpx.Timeout(self.timeouts.read, connect=self.timeouts.connect),
            transport=transport,
            # Guest traffic never goes through a host proxy.
            trust_env=False,
        )

    # --- plumbing -----------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GuestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _timeout(self, read: float) -> httpx.Timeout:
        return httpx.Timeout(read, connect=self.timeouts.connect)

    def _send(self, method: str, endpoint: str, *, read_timeout: float | None = None, **kwargs: Any) -> httpx.Response:
        """One request; a transport failure becomes :class:`GuestUnreachable`."""
        timeout = self._timeout(read_timeout if read_timeout is not None else self.timeouts.read)
        try:
            response = self._http.request(method, endpoint, timeout=timeout, **kwargs)
        except httpx.TimeoutException as exc:
            self._dropped = True
            raise GuestUnreachable(endpoint, f"no answer in time ({type(exc).__name__})", self.base_url) from None
        except httpx.TransportError as exc:
            self._dropped = True
            raise GuestUnreachable(endpoint, f"{type(exc).__name__}: {exc}", self.base_url) from None
        self._dropped = False
        return response

    @staticmethod
    def _check(endpoint: str, response: httpx.Response) -> httpx.Response:
        if response.status_code >= 400:
            raise GuestRequestError(endpoint, response.status_code, guest_message(response))
        return response

    def _once(self, method: str, endpoint: str, **kwargs: Any) -> httpx.Response:
        if self._dropped:
            self._await_server(endpoint, time.monotonic() + self.retry_budget)
        return self._check(endpoint, self._send(method, endpoint, **kwargs))

    def _await_server(self, endpoint: str, deadline: float) -> None:
        """Return once the guest server answers ``/platform`` again (a supervised one restarts within
        seconds); :class:`GuestUnreachable` for ``endpoint`` once the sandbox is found stopped or
        ``deadline`` (a :func:`time.monotonic` instant) has passed."""
        delay = 0.05
        while True:
            try:
                response = self._http.get("/platform", timeout=self._timeout(5.0))
                if response.status_code == 200:
                    self._dropped = False
                    return
                last = f"/platform answered {response.status_code}"
            except httpx.TransportError as exc:  # time-outs included
                last = type(exc).__name__
            if self.sandbox_alive is not None and not self.sandbox_alive():
                raise GuestUnreachable(endpoint, f"the sandbox is no longer running (last: {last})", self.base_url)
            if time.monotonic() + delay > deadline:
                raise GuestUnreachable(endpoint, f"the guest server did not come back (last: {last})", self.base_url)
            time.sleep(delay)  # poll interval of the readiness check
            delay = min(delay * 2, 1.0)

    def _idempotent(
        self,
        method: str,
        endpoint: str,
        *,
        accept: Callable[[httpx.Response], bool] | None = None,
        rewind: BinaryIO | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        """A call that may be repeated: retried on no answer and on 502/503/504 within the budget.

        ``accept`` lets a caller take an error status as an answer (``/file``'s 404).
        """
        deadline = time.monotonic() + self.retry_budget
        delay = 0.25
        while True:
            if rewind is not None:
                rewind.seek(0)
            try:
                response = self._send(method, endpoint, **kwargs)
            except GuestUnreachable:
                if time.monotonic() >= deadline:
                    raise
                self._await_server(endpoint, deadline)  # then the same request again
                continue
            if accept is not None and accept(response):
                return response
            if response.status_code not in TRANSIENT_STATUSES or time.monotonic() + delay > deadline:
                return self._check(endpoint, response)
            time.sleep(delay)  # backoff while the guest answers that it is not ready (e.g. no display yet)
            delay = min(delay * 2, 2.0)

    @staticmethod
    def _json(endpoint: str, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise GuestRequestError(
                endpoint, response.status_code, f"expected JSON, got {response.text[:200]!r}"
            ) from None

    # --- readiness ----------------------------------------------------------------------------

    def wait_ready(self, deadline: float, *, interval: float = 0.5) -> None:
        """Poll until ``/terminal`` and ``/screenshot`` both answer 200, as upstream does before setup.

        ``deadline`` is a :func:`time.monotonic` instant; past it, :class:`GuestUnreachable`.
        """
        last = "no answer yet"
        while True:
            try:
                statuses = []
                for endpoint in ("/terminal", "/screenshot"):
                    response = self._send("GET", endpoint, read_timeout=30.0)
                    statuses.append(f"{endpoint} {response.status_code}")
                if all(s.endswith(" 200") for s in statuses):
                    return
                last = ", ".join(statuses)
            except GuestUnreachable as exc:
                last = exc.problem
            if time.monotonic() + interval > deadline:
                raise GuestUnreachable("/terminal", f"not ready before the deadline (last: {last})", self.base_url)
            time.sleep(interval)  # poll interval of the readiness check

    # --- observation --------------------------------------------------------------------------

    def screenshot(self) -> bytes:
        return self._idempotent("GET", "/screenshot").content

    def screenshots(self, size: tuple[int, int]) -> tuple[bytes, bytes | None]:
        """The screen, and the same grab scaled to ``size`` by the guest (both PNG).

        A guest server without the route (OSWorld's own: 404) gives the screen only, and is not asked
        again: the caller scales it.
        """
        if not self._scales:
            return self.screenshot(), None
        endpoint = "/screenshot/scaled"
        response = self._idempotent(
            "GET", endpoint, params={"width": size[0], "height": size[1]}, accept=lambda r: r.status_code == 404
        )
        if response.status_code == 404:
            self._scales = False
            return self.screenshot(), None
        data = self._json(endpoint, response)
        try:
            return base64.b64decode(data["screenshot"], validate=True), base64.b64decode(data["scaled"], validate=True)
        except (TypeError, KeyError, ValueError, binascii.Error):
            raise GuestRequestError(
                endpoint, response.status_code, "expected base64 PNGs 'screenshot' and 'scaled'"
            ) from None

    def accessibility(self) -> str | None:
        data = self._json("/accessibility", self._idempotent("GET", "/accessibility"))
        return data.get("AT") if isinstance(data, dict) else None

    def terminal(self) -> str | None:
        data = self._json("/terminal", self._idempotent("GET", "/terminal"))
        return data.get("output") if isinstance(data, dict) else None

    def platform(self) -> str:
        return self._idempotent("GET", "/platform").text.strip()

    def cursor_position(self) -> tuple[int, int]:
        data = self._json("/cursor_position", self._idempotent("GET", "/cursor_position"))
        return int(data[0]), int(data[1])

    def screen_size(self) -> dict[str, int]:
        return cast("dict[str, int]", self._json("/screen_size", self._idempotent("POST", "/screen_size")))

    def window_size(self, app_class_name: str) -> dict[str, int] | None:
        """The size of the app's window; None when the guest finds no such window (404)."""
        response = self._idempotent(
            "POST", "/window_size", data={"app_class_name": app_class_name}, accept=lambda r: r.status_code == 404
        )
        return None if response.status_code == 404 else self._json("/window_size", response)

    def desktop_path(self) -> str:
        data = self._json("/desktop_path", self._idempotent("POST", "/desktop_path"))
        return cast(str, data["desktop_path"])

    def wallpaper(self) -> bytes | None:
        """The wallpaper image's bytes; None when none is set (404)."""
        response = self._idempotent("POST", "/wallpaper", accept=lambda r: r.status_code == 404)
        return None if response.status_code == 404 else response.content

    def list_directory(self, path: str) -> dict[str, Any]:
        data = self._json("/list_directory", self._idempotent("POST", "/list_directory", json={"path": path}))
        return cast("dict[str, Any]", data["directory_tree"])

    # --- files --------------------------------------------------------------------------------

    def file(self, path: str) -> bytes | None:
        """The file's bytes; None when it does not exist (upstream's meaning of a missing file)."""
        response = self._idempotent("POST", "/file", data={"file_path": path}, accept=lambda r: r.status_code == 404)
        return None if response.status_code == 404 else response.content

    def upload(self, guest_path: str, source: Path | bytes) -> None:
        """Write ``source`` (a host file or bytes) to ``guest_path``; the same bytes twice is harmless."""
        name = Path(guest_path).name or "upload"
        if isinstance(source, bytes):
            self._idempotent(
                "POST",
                "/setup/upload",
                data={"file_path": guest_path},
                files={"file_data": (name, source)},
                read_timeout=self.timeouts.upload,
            )
            return
        with open(source, "rb") as fh:
            self._idempotent(
                "POST",
                "/setup/upload",
                data={"file_path": guest_path},
                files={"file_data": (name, fh)},
                read_timeout=self.timeouts.upload,
                rewind=fh,
            )

    def download_file(self, url: str, path: str) -> None:
        """Have the guest fetch ``url`` itself into ``path``."""
        self._once("POST", "/setup/download_file", json={"url": url, "path": path}, read_timeout=self.timeouts.download)

    # --- commands -----------------------------------------------------------------------------

    def execute(self, command: str | list[str], shell: bool = False) -> ExecResult:
        """Run a command to its end (the guest kills it after 120 s). Sent once, never retried."""
        response = self._once(
            "POST", "/execute", json={"command": command, "shell": shell}, read_timeout=self.timeouts.execute
        )
        return ExecResult.from_json(self._json("/execute", response))

    def run_pyautogui(self, code: str) -> ExecResult:
        """Run pyautogui code in the guest, the way upstream sends an action."""
        return self.execute(["python3", "-c", PYAUTOGUI_PREFIX + code])

    def run_action(self, code: str, timeout: float) -> ExecResult:
        """Run an agent's pyautogui code; the guest kills it after ``timeout`` seconds.

        Whatever the action does ends as a result: a non-zero exit status, the guest's refusal (its
        status and message), a time-out. Only a guest that is gone raises :class:`GuestUnreachable`.
        The action is sent again only while connections are refused (it never reached the guest),
        within the retry budget; one that reached the guest is never sent twice.
        """
        endpoint = "/execute"
        body = {"command": ["python3", "-c", PYAUTOGUI_PREFIX + code], "shell": False, "timeout_seconds": timeout}
        wait = timeout + ACTION_ANSWER_GRACE_S
        deadline = time.monotonic() + self.retry_budget
        if self._dropped:
            self._await_server(endpoint, deadline)
        while True:
            try:
                response = self._http.post(endpoint, json=body, timeout=self._timeout(wait))
                break
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                # Refused: the action never reached the guest; it is sent again once the guest answers.
                if time.monotonic() >= deadline:
                    raise GuestUnreachable(endpoint, f"{type(exc).__name__}: {exc}", self.base_url) from None
                self._await_server(endpoint, deadline)
            except httpx.TimeoutException:
                # Sent but unanswered: a guest server that does not honour timeout_seconds (OSWorld's
                # own kills at 120 s), or a hung guest, which the readiness check tells apart.
                self._await_server(endpoint, time.monotonic() + self.retry_budget)
                return _action_failure(f"the guest did not answer within {wait:g} s", timed_out=True)
            except httpx.TransportError as exc:
                # The guest server ended while the action ran (the action may have killed it): the
                # action failed; the episode goes on once the supervised server answers again.
                self._await_server(endpoint, time.monotonic() + self.retry_budget)
                return _action_failure(
                    f"the connection dropped while the action ran ({type(exc).__name__}: {exc}); "
                    "the guest server answered again afterwards"
                )
        self._dropped = False
        data = _json_object(response)
        if response.status_code == 200:
            if not data:
                return _action_failure(f"the guest answered 200 without a result: {response.text[:200]!r}")
            return ExecResult.from_json(data)
        message = guest_message(response)
        output = data["output"] if isinstance(data.get("output"), str) else ""
        # OSWorld's own server answers a time-out with 500 and "... timed out after N seconds".
        if data.get("timed_out") or (response.status_code == 500 and "timed out" in message):
            return _action_failure(f"timed out: {message}", timed_out=True, output=output)
        return _action_failure(f"guest answered {response.status_code}: {message}", output=output)

    def launch(self, command: str | list[str], shell: bool = False) -> str:
        """Start a program and return at once. Sent once, never retried."""
        return self._once("POST", "/setup/launch", json={"command": command, "shell": shell}).text

    def open_file(self, path: str) -> str:
        """Open with the default application; the guest waits for its window."""
        return self._once("POST", "/setup/open_file", json={"path": path}, read_timeout=self.timeouts.open_file).text

    def change_wallpaper(self, path: str) -> str:
        return self._idempotent("POST", "/setup/change_wallpaper", json={"path": path}).text

    def activate_window(self, window_name: str, strict: bool = False, by_class: bool = False) -> str:
        return self._once(
            "POST", "/setup/activate_window", json={"window_name": window_name, "strict": strict, "by_class": by_class}
        ).text

    def close_window(self, window_name: str, strict: bool = False, by_class: bool = False) -> str:
        return self._once(
            "POST", "/setup/close_window", json={"window_name": window_name, "strict": strict, "by_class": by_class}
        ).text

    # --- the project's own --------------------------------------------------------------------

    def restarts(self) -> list[dict[str, Any]] | None:
        """The supervised processes that restarted in the guest, and when (``GET /pytest-osworld/restarts``):
        a list of ``{process, at, exit_code, signal, down_seconds}``; None from a guest without it (404)."""
        endpoint = "/pytest-osworld/restarts"
        response = self._idempotent("GET", endpoint, accept=lambda r: r.status_code == 404)
        if response.status_code == 404:
            return None
        data = self._json(endpoint, response)
        found = data.get("restarts") if isinstance(data, dict) else None
        if not isinstance(found, list) or not all(isinstance(each, dict) for each in found):
            raise GuestRequestError(endpoint, response.status_code, f"expected a list of restarts, got {found!r:.200}")
        return found

    # --- recording ----------------------------------------------------------------------------

    def start_recording(self) -> None:
        self._once("POST", "/start_recording", read_timeout=self.timeouts.recording)

    def end_recording(self, dest: Path) -> Path:
        """Stop the recording and write the mp4 to ``dest``."""
        endpoint = "/end_recording"
        timeout = self._timeout(self.timeouts.recording)
        try:
            with self._http.stream("POST", endpoint, timeout=timeout) as response:
                if response.status_code >= 400:
                    response.read()
                    raise GuestRequestError(endpoint, response.status_code, guest_message(response))
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.with_name(f".{dest.name}.part")
                with open(tmp, "wb") as out:
                    for chunk in response.iter_bytes(1 << 20):
                        out.write(chunk)
                tmp.replace(dest)
        except httpx.TimeoutException as exc:
            raise GuestUnreachable(endpoint, f"no answer in time ({type(exc).__name__})", self.base_url) from None
        except httpx.TransportError as exc:
            raise GuestUnreachable(endpoint, f"{type(exc).__name__}: {exc}", self.base_url) from None
        return dest
