"""The two waits OSWorld's runner makes around the agent: after setup, and before the evaluation.

OSWorld sleeps 60 s after the task's setup, before the first observation (applications it launched
finish opening), and 20 s after the agent's last action, before the evaluation (applications flush
files, autosave and finish loading before the evaluator reads them). ``start_settle`` and
``eval_settle`` are those numbers of seconds (60 and 20 reproduce OSWorld), or ``quiet``: poll the
guest until the screen (and, before the evaluation, the files the evaluator's result getters will
read) stop changing for :data:`QUIET_WINDOW_S`, at most OSWorld's wait in all
(:data:`START_QUIET_LIMIT_S`, :data:`QUIET_LIMIT_S`).

A result file that does not exist yet keeps the wait going: an application may still be writing it.
A screen that only toggles between two images (a blinking caret) counts as still.
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pytest_osworld.guest.client import GuestClient
from pytest_osworld.record import SettleRecord
from pytest_osworld.tasks.model import Evaluator, Getter

QUIET_LIMIT_S = 20.0  # never longer than OSWorld's own wait before the evaluation
START_QUIET_LIMIT_S = 60.0  # nor than its wait after setup
QUIET_WINDOW_S = 1.0  # how long nothing may change before the guest counts as settled
POLL_INTERVAL_S = 0.2

CHROME_PROFILE = "~/.config/google-chrome"


@dataclass(frozen=True)
class Watched:
    """A guest path the evaluation reads. ``required``: its absence means it is not written yet; a
    file whose getter answers a fallback when it is missing (Chrome's profile files) does not hold
    the wait by its absence."""

    path: str
    required: bool = True


Reader = Callable[[dict[str, Any]], list[Watched]]


def _argument(key: str) -> Reader:
    """The paths in the getter's argument ``key`` (a path, or a list of them)."""

    def read(config: dict[str, Any]) -> list[Watched]:
        value = config.get(key)
        paths = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        return [Watched(p) for p in paths if isinstance(p, str)]

    return read


def _fixed(*paths: str, required: bool = True) -> Reader:
    return lambda config: [Watched(p, required) for p in paths]


def _chrome(*relative: str) -> Reader:
    return _fixed(*(f"{CHROME_PROFILE}/{r}" for r in relative), required=False)


def _gimp(config: dict[str, Any]) -> list[Watched]:
    name = config.get("file_name")
    return [Watched(f"~/.config/GIMP/2.10/{name}")] if isinstance(name, str) else []


# Result getter type -> the guest paths it reads, from its configuration alone (no guest call).
_READS: dict[str, Reader] = {
    "vm_file": _argument("path"),
    "content_from_vm_file": _argument("path"),
    "vscode_config": _argument("path"),
    "gimp_config_file": _gimp,
    "vlc_config": _fixed("~/.config/vlc/vlcrc"),
    "audio_in_slide": _argument("ppt_file_path"),
    "background_image_in_slide": _argument("ppt_file_path"),
    "list_directory": _argument("path"),
    "bookmarks": _chrome("Default/Bookmarks"),
    "history": _chrome("Default/History"),
    "cookie_data": _chrome("Default/Cookies", "Default/Network/Cookies"),
    "shortcuts_on_desktop": _fixed("~/Desktop", required=False),
    "enabled_experiments": _chrome("Local State"),
    "chrome_language": _chrome("Local State"),
    **dict.fromkeys(
        (
            "default_search_engine",
            "profile_name",
            "chrome_font_size",
            "enable_do_not_track",
            "enable_enhanced_safety_browsing",
            "enable_safe_browsing",
            "new_startup_page",
            "find_unpacked_extension_path",
            "find_installed_extension_name",
            "data_delete_automacally",
        ),
        _chrome("Default/Preferences"),
    ),
}


def watched_files(evaluator: Evaluator) -> list[Watched]:
    """The guest files the evaluator's *result* getters read, in order, each once (required when any
    getter requires it)."""
    found: dict[str, Watched] = {}
    for getter in _result_getters(evaluator):
        read = _READS.get(getter.type)
        for watched in read(getter.to_json()) if read else []:
            known = found.get(watched.path)
            found[watched.path] = watched if known is None or watched.required else known
    return list(found.values())


def _result_getters(evaluator: Evaluator) -> Iterator[Getter]:
    result = evaluator.result
    if isinstance(result, Getter):
        yield result
    elif isinstance(result, list):
        yield from (g for g in result if g is not None)


def wait_fixed(seconds: float) -> SettleRecord:
    """OSWorld's wait: exactly ``seconds``, whatever the guest does."""
    started = time.monotonic()
    if seconds > 0:
        time.sleep(seconds)  # the fixed wait is the setting itself (OSWorld's time.sleep(60) and (20))
    return SettleRecord(mode="fixed", seconds=round(time.monotonic() - started, 3), limit=seconds)


class _FileState:
    """The size, modification time and inode of each watched file, read in one guest command."""

    # One line per path, in order: "size mtime inode", or "-" for a path that does not exist.
    SCRIPT = 'for f; do stat -L --printf "%s %.9Y %i\\n" -- "$f" 2>/dev/null || echo -; done'

    def __init__(self, guest: GuestClient, files: list[Watched]) -> None:
        self.guest = guest
        self.files = files

    def read(self) -> tuple[str, bool]:
        """(a fingerprint of the files, whether every required file exists)."""
        if not self.files:
            return "", True
        # The guest expands each argument's leading "~/"; "settle" is the script's $0.
        answer = self.guest.execute(["bash", "-c", self.SCRIPT, "settle", *(f.path for f in self.files)])
        lines = answer.output.splitlines()
        complete = len(lines) == len(self.files) and all(
            line != "-" for line, f in zip(lines, self.files, strict=True) if f.required
        )
        return answer.output, complete


def wait_quiet(
    guest: GuestClient,
    files: list[Watched],
    *,
    last_screen: bytes | None = None,
    limit: float = QUIET_LIMIT_S,
    window: float = QUIET_WINDOW_S,
    interval: float = POLL_INTERVAL_S,
) -> SettleRecord:
    """Poll until the screen and ``files`` are unchanged for ``window`` seconds (and every required
    file exists), or ``limit`` seconds have passed. ``last_screen``: the screenshot just taken, if any.
    """
    started = time.monotonic()
    state = _FileState(guest, files)
    # The last two different screens: a screen that only goes back to one of them is a blinking
    # caret or cursor, not an application at work.
    screens: deque[bytes] = deque(maxlen=2)
    if last_screen is not None:
        screens.append(_digest(last_screen))
    fingerprint, complete = state.read()
    last_change, polls, deadline = started, 0, started + limit
    while not (complete and time.monotonic() - last_change >= window):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(interval, remaining))  # poll interval of a readiness check
        if time.monotonic() >= deadline:
            break
        polls += 1
        screen = _digest(guest.screenshot())
        if screen not in screens:
            screens.append(screen)
            last_change = time.monotonic()
        current, complete = state.read()
        if current != fingerprint:
            fingerprint, last_change = current, time.monotonic()
    quiet = complete and time.monotonic() - last_change >= window
    return SettleRecord(
        mode="quiet",
        seconds=round(time.monotonic() - started, 3),
        limit=limit,
        quiet=quiet,
        watched=[f.path for f in files],
        polls=polls,
    )


def _digest(png: bytes) -> bytes:
    # The guest encodes the same pixels to the same bytes, so equal digests mean an equal screen.
    return hashlib.blake2b(png, digest_size=16).digest()
