"""Headless Chromium (Debian's ``chromium``) driven over the DevTools protocol, for tests of pages.

The browser listens for DevTools on a free loopback port; each tab is a CDP session (the project's own
client, ``pytest_osworld.guest.devtools``). A missing browser is an error naming the package, never a skip.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.guest.devtools import CdpSession, DevTools
from tests.support.polling import wait_for

_LISTENING = re.compile(r"DevTools listening on (ws://[^\s]+)")


class Tab:
    def __init__(self, session: CdpSession, target_id: str) -> None:
        self.cdp = session
        self.target_id = target_id

    def evaluate(self, expression: str) -> Any:
        return self.cdp.evaluate(expression)

    def unfinished_requests(self) -> list[str]:
        """The tab's requests that neither finished nor failed (what a stuck page waits for)."""
        self.cdp.call("Runtime.evaluate", {"expression": "0"})  # reads the events that came meanwhile
        sent: dict[str, str] = {}
        done: set[str] = set()
        for event in self.cdp._events:
            params = event.get("params", {})
            if event.get("method") == "Network.requestWillBeSent":
                sent[params["requestId"]] = params["request"]["url"]
            elif event.get("method") in ("Network.loadingFinished", "Network.loadingFailed"):
                done.add(params["requestId"])
            elif event.get("method") == "Network.webSocketCreated":
                sent[params["requestId"]] = "ws " + params["url"]
        return [url for rid, url in sent.items() if rid not in done]

    def errors(self) -> list[str]:
        """The tab's uncaught exceptions and console errors so far (read with ``unfinished_requests``)."""
        found = []
        for event in self.cdp._events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append(str(details.get("exception", {}).get("description") or details.get("text")))
            elif event.get("method") == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(f"{params['entry'].get('text')} ({params['entry'].get('url', '')})")
            elif event.get("method") == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        return found

    def screenshot(self, path: Path) -> Path:
        self.cdp.call("Page.bringToFront")
        data = self.cdp.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def key(self, key: str, code: str, keycode: int) -> None:
        """A key pressed and released, as a keyboard gives it to the focused element."""
        self.cdp.call("Page.bringToFront")
        for kind in ("keyDown", "keyUp"):
            event = {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": keycode}
            self.cdp.call("Input.dispatchKeyEvent", {**event, **({"text": key} if kind == "keyDown" else {})})

    def click(self, x: float, y: float) -> None:
        self.cdp.call("Page.bringToFront")
        self.cdp.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self.cdp.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})


class Chromium:
    def __init__(self, folder: Path, width: int = 1400, height: int = 900) -> None:
        binary = shutil.which("chromium") or shutil.which("chromium-browser")
        if binary is None:
            pytest.fail("no chromium on PATH: install Debian's chromium package (.ci/setup does)", pytrace=False)
        self.log = folder / "chromium.log"
        with self.log.open("w") as log:  # a file, not a pipe: nobody has to drain what the browser says
            self.process = self._start(binary, folder, width, height, log)
        self.base_url = self._listening()
        self.devtools = DevTools(self.base_url)
        self.tabs: list[Tab] = []

    @staticmethod
    def _start(binary: str, folder: Path, width: int, height: int, log: Any) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",  # tests run as root
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                # Every tab keeps running at full speed: the tests read pages that are not in front.
                "--disable-background-timer-throttling",
                "--disable-renderer-backgrounding",
                "--disable-backgrounding-occluded-windows",
                f"--user-data-dir={folder / 'profile'}",
                f"--window-size={width},{height}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            text=True,
        )

    def _listening(self) -> str:
        def address() -> str | None:
            found = _LISTENING.search(self.log.read_text(errors="replace"))
            if found is None and self.process.poll() is not None:
                pytest.fail(f"chromium exited: {self.log.read_text(errors='replace')[-2000:]}", pytrace=False)
            return found[1] if found else None

        ws = wait_for(address, "chromium's DevTools to listen", timeout=60)
        return "http://" + ws.removeprefix("ws://").split("/", 1)[0]

    def open(self, url: str) -> Tab:
        target = self.devtools.new_tab("about:blank")
        session = CdpSession(target["webSocketDebuggerUrl"])
        # Every tab behaves as the focused one (keys go to its focused element), in front or not.
        session.call("Emulation.setFocusEmulationEnabled", {"enabled": True})
        # Its requests, errors and console, for a failure to say which never finished and what broke.
        for domain in ("Network", "Runtime", "Log"):
            session.call(f"{domain}.enable")
        session.call("Page.navigate", {"url": url})
        tab = Tab(session, target["id"])
        self.tabs.append(tab)
        return tab

    def close(self) -> None:
        for tab in self.tabs:
            tab.cdp.close()
        self.devtools.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
