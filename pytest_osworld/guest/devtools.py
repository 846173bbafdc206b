"""Chrome DevTools on the guest's port 9222: the HTTP endpoints, and a small CDP session over a websocket.

The HTTP endpoints (``/json/version``, ``/json/list``, ``/json/new``, ``/json/close``) cover tabs;
a CDP session on one tab waits for its load and reads its title, URL and HTML. No browser driver
is needed on the host.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import quote, urlsplit

import httpx

from pytest_osworld.errors import OsworldError

DEFAULT_CONNECT_WAIT_S = 75.0  # upstream tries 15 times, 5 s apart
POLL_S = 0.25


class DevToolsError(OsworldError):
    """DevTools did not answer, or a CDP call failed; the message says which and why."""


class CdpTimeout(DevToolsError):
    """A CDP call got no answer in time (the socket itself is fine)."""


# Chrome's error texts for a server that does not accept connections (yet).
NOT_LISTENING_YET = frozenset({"net::ERR_CONNECTION_REFUSED", "net::ERR_CONNECTION_RESET"})
_RETRY_PAUSE_S = 0.5
# The main document's HTTP status as the page itself saw it (0 for file:// and browser pages).
_RESPONSE_STATUS_JS = "(performance.getEntriesByType('navigation')[0] || {}).responseStatus || 0"


@dataclass(frozen=True)
class Navigation:
    """How a navigation of a tab ended."""

    url: str
    timeout: float
    error: str | None  # the browser's errorText (``net::ERR_NAME_NOT_RESOLVED``, ``net::ERR_ABORTED``, ...)
    answered: bool  # the navigation committed or failed within the timeout
    loaded: bool  # the load event fired within the timeout
    status: int | None  # the main document's HTTP status (0 for non-HTTP pages), None when unread

    @property
    def problem(self) -> str | None:
        """What went wrong, in words; None for a page that loaded."""
        if not self.answered:
            return f"no answer within {self.timeout:g} s"
        if self.error:
            return f"failed to load ({self.error})"
        if not self.loaded:
            return f"did not finish loading within {self.timeout:g} s"
        return None


class CdpSession:
    """One CDP websocket connection to a tab (``ws://.../devtools/page/<id>``)."""

    def __init__(self, ws_url: str, timeout: float = 30.0) -> None:
        import websocket  # websocket-client; imported here so the rest of the module works without it

        self._ws_module = websocket
        try:
            # No Origin header: Chrome refuses websocket origins it was not told to allow.
            self._ws = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True)
        except (OSError, websocket.WebSocketException) as exc:
            raise DevToolsError(f"cannot open the DevTools websocket {ws_url}: {exc}") from None
        self._ids = itertools.count(1)
        self._events: list[dict[str, Any]] = []

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a broken socket has nothing left to report
            self._ws.close()

    def _receive(self, deadline: float) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        self._ws.settimeout(remaining)
        try:
            raw = self._ws.recv()
        except self._ws_module.WebSocketTimeoutException:
            raise TimeoutError from None
        except (OSError, self._ws_module.WebSocketException) as exc:
            raise DevToolsError(f"the DevTools websocket broke: {exc}") from None
        return cast("dict[str, Any]", json.loads(raw))  # CDP messages are JSON objects

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> dict[str, Any]:
        message_id = next(self._ids)
        try:
            self._ws.send(json.dumps({"id": message_id, "method": method, "params": params or {}}))
        except (OSError, self._ws_module.WebSocketException) as exc:
            raise DevToolsError(f"the DevTools websocket broke: {exc}") from None
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self._receive(deadline)
            except TimeoutError:
                raise CdpTimeout(f"{method} got no answer within {timeout:g} s") from None
            if message.get("id") == message_id:
                if "error" in message:
                    raise DevToolsError(f"{method} failed: {message['error'].get('message', message['error'])}")
                return cast("dict[str, Any]", message.get("result", {}))
            if "method" in message:
                self._events.append(message)

    def wait_event(self, name: str, timeout: float) -> bool:
        """Whether the event ``name`` arrived (or had already) within ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == name:
                    del self._events[: i + 1]
                    return True
            self._events.clear()
            try:
                message = self._receive(deadline)
            except TimeoutError:
                return False
            if "method" in message:
                self._events.append(message)

    def evaluate(self, expression: str, timeout: float = 30.0) -> Any:
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "error")
            raise DevToolsError(f"script failed in the page: {text}")
        return result.get("result", {}).get("value")

    def open(self, url: str, timeout: float, *, retry_refused: float = 0.0, read_status: bool = False) -> Navigation:
        """Navigate this tab to ``url`` and wait for its load event, within ``timeout`` in all.

        A refused or reset connection is tried again for ``retry_refused`` seconds (a server that was
        just launched may not listen yet). With ``read_status`` the main document's HTTP status is read
        from the page itself.
        """
        deadline = time.monotonic() + timeout
        retry_until = time.monotonic() + min(timeout, retry_refused)
        self.call("Page.enable", timeout=timeout)
        while True:
            self._events.clear()
            try:
                # Answered once the navigation commits (or fails); a server that never answers never commits.
                result = self.call("Page.navigate", {"url": url}, timeout=max(1.0, deadline - time.monotonic()))
            except CdpTimeout:
                return Navigation(url, timeout, error=None, answered=False, loaded=False, status=None)
            error = result.get("errorText") or None
            if error not in NOT_LISTENING_YET or time.monotonic() + _RETRY_PAUSE_S > retry_until:
                break
            time.sleep(_RETRY_PAUSE_S)  # the page's server may be starting: try again shortly
        if error:
            return Navigation(url, timeout, error=error, answered=True, loaded=False, status=None)
        loaded = self.wait_event("Page.loadEventFired", max(0.0, deadline - time.monotonic()))
        status = None
        if read_status:
            try:
                status = self.evaluate(_RESPONSE_STATUS_JS, timeout=max(5.0, deadline - time.monotonic()))
            except DevToolsError:  # a script navigated on meanwhile: the response itself had arrived
                status = None
        return Navigation(
            url, timeout, error=None, answered=True, loaded=loaded, status=status if isinstance(status, int) else None
        )

    def goto(self, url: str, timeout: float) -> str | None:
        """Go to ``url`` and wait for its load event; None when it loaded, else what went wrong."""
        return self.open(url, timeout).problem

    def navigate(self, url: str, timeout: float) -> bool:
        """Whether ``url`` loaded within ``timeout``."""
        return self.goto(url, timeout) is None

    def wait_loaded(self, timeout: float) -> bool:
        """Poll until the document is complete; False when it is not within ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.evaluate("document.readyState", timeout=max(1.0, deadline - time.monotonic())) == "complete":
                    return True
            except DevToolsError:
                pass  # a navigation can replace the context between two polls
            if time.monotonic() + POLL_S > deadline:
                return False
            time.sleep(POLL_S)


class DevTools:
    """The DevTools HTTP endpoint of the guest's browser at ``base_url`` (host side of port 9222)."""

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, trust_env=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get(self, path: str, method: str = "GET") -> httpx.Response:
        try:
            response = self._http.request(method, path)
        except httpx.HTTPError as exc:
            raise DevToolsError(f"Chrome DevTools at {self.base_url} did not answer {path}: {exc}") from None
        return response

    def available(self) -> bool:
        try:
            return self._get("/json/version").status_code == 200
        except DevToolsError:
            return False

    def wait_available(self, timeout: float = DEFAULT_CONNECT_WAIT_S) -> None:
        deadline = time.monotonic() + timeout
        while not self.available():
            if time.monotonic() + POLL_S > deadline:
                raise DevToolsError(
                    f"Chrome DevTools at {self.base_url} did not answer within {timeout:g} s: is Chrome running "
                    "with --remote-debugging-port=1337 and socat forwarding port 9222 to it?"
                )
            time.sleep(POLL_S)  # poll until Chrome and the forwarder are up

    def targets(self) -> list[dict[str, Any]]:
        response = self._get("/json/list")
        if response.status_code != 200:
            raise DevToolsError(f"/json/list answered {response.status_code}")
        return cast("list[dict[str, Any]]", response.json())

    def pages(self) -> list[dict[str, Any]]:
        """The tabs, most recently active first (the order Chrome lists them in)."""
        return [t for t in self.targets() if t.get("type") == "page"]

    def wait_pages(self, timeout: float) -> list[dict[str, Any]]:
        """The tabs, once there is at least one: a browser that has just started answers DevTools
        before its start tab exists. Empty when none appears within ``timeout``."""
        deadline = time.monotonic() + timeout
        while not (pages := self.pages()) and time.monotonic() + POLL_S <= deadline:
            time.sleep(POLL_S)  # poll until the browser has opened its start tab
        return pages

    def new_tab(self, url: str = "about:blank") -> dict[str, Any]:
        path = "/json/new?" + quote(url, safe="")
        response = self._get(path, method="PUT")  # current Chrome wants PUT
        if response.status_code == 405:
            response = self._get(path)
        if response.status_code != 200:
            raise DevToolsError(f"cannot open a tab for {url}: /json/new answered {response.status_code}")
        return cast("dict[str, Any]", response.json())

    def close_tab(self, target_id: str) -> None:
        response = self._get(f"/json/close/{target_id}")
        if response.status_code != 200:
            raise DevToolsError(f"cannot close tab {target_id}: /json/close answered {response.status_code}")

    def activate(self, target_id: str) -> None:
        self._get(f"/json/activate/{target_id}")

    def ws_url(self, target: dict[str, Any]) -> str:
        """The target's websocket URL, reached through this client's host and port (Chrome names its own)."""
        raw = target.get("webSocketDebuggerUrl")
        path = urlsplit(raw).path if raw else f"/devtools/page/{target['id']}"
        return f"ws://{urlsplit(self.base_url).netloc}{path}"

    @contextmanager
    def session(self, target: dict[str, Any], timeout: float = 30.0) -> Iterator[CdpSession]:
        cdp = CdpSession(self.ws_url(target), timeout=timeout)
        try:
            yield cdp
        finally:
            cdp.close()

    @contextmanager
    def browser_session(self, timeout: float = 30.0) -> Iterator[CdpSession]:
        response = self._get("/json/version")
        if response.status_code != 200:
            raise DevToolsError(f"/json/version answered {response.status_code}")
        raw = response.json().get("webSocketDebuggerUrl", "")
        cdp = CdpSession(f"ws://{urlsplit(self.base_url).netloc}{urlsplit(raw).path}", timeout=timeout)
        try:
            yield cdp
        finally:
            cdp.close()

    @contextmanager
    def temporary_page(self, *, isolated: bool = False, timeout: float = 30.0) -> Iterator[CdpSession]:
        """A new tab for the evaluator to read a page in, closed afterwards.

        ``isolated`` opens it in a fresh browser context (no cookies of the user's session), as a
        new Playwright page of the browser does upstream.
        """
        if not isolated:
            target = self.new_tab()
            try:
                with self.session(target, timeout=timeout) as cdp:
                    yield cdp
            finally:
                self._close_quietly(target["id"])
            return
        with self.browser_session(timeout=timeout) as browser:
            context_id = browser.call("Target.createBrowserContext")["browserContextId"]
            try:
                target_id = browser.call("Target.createTarget", {"url": "about:blank", "browserContextId": context_id})[
                    "targetId"
                ]
                with self.session({"id": target_id}, timeout=timeout) as cdp:
                    yield cdp
            finally:
                with contextlib.suppress(DevToolsError):  # the browser went away: nothing left to dispose
                    browser.call("Target.disposeBrowserContext", {"browserContextId": context_id})

    def _close_quietly(self, target_id: str) -> None:
        with contextlib.suppress(DevToolsError):  # already closed, or the browser went away
            self.close_tab(target_id)
