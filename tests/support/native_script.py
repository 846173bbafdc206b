"""Scripted computer-use conversations for the native protocols' test servers.

A bundled task's reference solution becomes a plan of turns, each answered in one model response:

- ``pyautogui`` code of key presses, typing and clicks becomes those GUI actions (clicks in screen
  pixels; each server writes them in its model's frame);
- plain Python (the os tasks, the app tasks' file edits) cannot be done with a GUI action: it is typed
  into a terminal, as a person would do it. ctrl+alt+t opens the terminal (the desktop image binds it,
  as OSWorld's Ubuntu); the scripted model waits, looking at the screenshots it is sent, until a
  window has appeared; types ``python3 - <<'EOF'`` with the code and ``exit``; and waits until the
  terminal's title bar is gone (the command finished and the terminal closed) before going on;
- before the first terminal of a task whose setup starts an application, the scripted model waits until
  that application is up (a focused window, a still screen): one that appears later takes the keyboard;
- ``WAIT`` waits until the screen stopped changing and shows something (a window still loading is
  blank); ``DONE`` and ``FAIL`` are the protocol's ending (done; "the task is infeasible").

The failure cases play on copies of one quick task whose instruction ends with ``[case:NAME]``
(:data:`CASES`): the fault first, then the task's own solution.
"""

from __future__ import annotations

import ast
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from pytest_osworld.guest.client import PYAUTOGUI_PREFIX
from pytest_osworld.services.builtin import BUILTIN
from tests.support.paths import REPO

SUFFIX = "osworld.test"  # the default service host suffix
TOKEN_FILE = "/home/user/.forge-token"  # where forge-open-merge-request's setup writes the token
WAIT_S = 2.0
POLL_S = 0.5
# The waits are timed, not counted: a look costs a fraction of a second on an idle host and several on
# a loaded one.
MAX_WAIT_S = 150.0  # waiting this long for a terminal is a failure of the run
REPRESS_S = 15.0  # no terminal this long after ctrl+alt+t: press it again
READY_POLLS = 2  # an application is up after at least this many looks at a still screen with a focused window
READY_GIVE_UP_S = 75.0  # then go on without the application (a slow start under load)
SETTLE_GIVE_UP_S = 25.0  # then a WAIT goes on with the screen as it is
BLANK = 0.95  # a screen this much of one colour shows nothing yet
STILL = 0.01  # a screen that changed less than this share is still (a blinking caret, a spinner)
TERMINAL_WIDTH = (0.2, 0.7)  # the terminal's title bar spans this share of the screen's width
MIN_BAR, MAX_BAR = 0.008, 0.03  # a title bar's height, as a share of the screen's


# --- plan steps (screen pixels) ------------------------------------------------------------------


@dataclass(frozen=True)
class Keys:
    chords: tuple[tuple[str, ...], ...]  # pyautogui names, pressed one chord after the other


@dataclass(frozen=True)
class Write:
    text: str


@dataclass(frozen=True)
class Click:
    x: int
    y: int
    button: str = "left"
    clicks: int = 1


@dataclass(frozen=True)
class Pause:
    seconds: float = WAIT_S


@dataclass(frozen=True)
class Finish:
    feasible: bool  # DONE, or "the task is infeasible"


@dataclass(frozen=True)
class OpenTerminal:
    """ctrl+alt+t; the screen the model was shown becomes the baseline to see the terminal appear."""


@dataclass(frozen=True)
class AwaitTerminal:
    open: bool  # wait until a terminal window is there (True) or gone (False)


@dataclass(frozen=True)
class AwaitReady:
    """Wait until the task's application is up: a focused window, and a screen that stopped changing
    (at most ``READY_GIVE_UP_S``: then go on, as a person who waited long enough)."""


@dataclass(frozen=True)
class Settle:
    """The solution's WAIT: wait until the screen stopped changing and shows more than one colour (a
    window still loading is blank), at most ``SETTLE_GIVE_UP_S``."""


@dataclass(frozen=True)
class Fault:
    kind: str  # one of CASES


@dataclass(frozen=True)
class Look:
    """Informing calls: a screenshot, the pointer's position and a zoom on ``region`` (screen pixels)."""

    region: tuple[int, int, int, int] = (0, 0, 480, 270)


Step = Keys | Write | Click | Pause | Finish | OpenTerminal | AwaitTerminal | AwaitReady | Settle | Fault | Look
Turn = tuple[Step, ...]

# The failure cases (docs/agents.md, item 5 of the issue): what each protocol's server answers first.
CASES = ("nonsense", "unknown", "refusal", "cut", "overloaded", "overloaded_forever", "safety", "look")
_CASE = re.compile(r"\[case:([a-z_]+)\]")


def case_of(instruction: str) -> str | None:
    match = _CASE.search(instruction)
    return match.group(1) if match else None


# --- tasks ---------------------------------------------------------------------------------------


def fill(text: str) -> str:
    """A task text with the service URLs filled as a sandbox of a default run reaches them."""

    def url(match: re.Match[str]) -> str:
        service = BUILTIN[match.group(1)]
        port = int(match.group(2)) if match.group(2) else service.ports[0]
        host = service.hostnames(SUFFIX)[0]
        return f"http://{host}" if port == 80 else f"http://{host}:{port}"

    return re.sub(r"\{SERVICE_URL:([a-z]+)(?::(\d+))?\}", url, text)


def bundled_v1_tasks() -> list[dict[str, Any]]:
    """Every bundled v1 task (tasks/*.jsonl)."""
    return [
        json.loads(line) for path in sorted((REPO / "tasks").glob("*.jsonl")) for line in path.read_text().splitlines()
    ]


def case_tasks(base_id: str, cases: tuple[str, ...]) -> list[dict[str, Any]]:
    """Copies of the bundled task ``base_id`` under new ids, one per case, the case named in the instruction."""
    base = next(t for t in bundled_v1_tasks() if t["id"] == base_id)
    return [
        {**base, "id": f"case-{case.replace('_', '-')}", "instruction": f"{base['instruction']} [case:{case}]"}
        for case in cases
    ]


def write_jsonl(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


# --- solutions as plans ----------------------------------------------------------------------------


def plan(task: dict[str, Any]) -> list[Turn]:
    """The turns that play ``task``'s reference solution (with its case's fault first)."""
    turns: list[Turn] = []
    case = case_of(task["instruction"])
    if case == "look":
        turns.append((Look(),))
    elif case is not None:
        turns.append((Fault(case),))
    # A task whose setup starts an application: a person waits until it is up before opening a
    # terminal over it (an application that appears later takes the keyboard).
    waits_for_app = set(task.get("related_apps") or []) - {"os"}
    for entry in task.get("solution") or []:
        if entry in ("WAIT", "DONE", "FAIL"):
            turns.append((Settle(),) if entry == "WAIT" else (Finish(entry == "DONE"),))
            continue
        code = fill(entry)
        gui = gui_steps(code)
        if gui is not None:
            turns.append(tuple(gui))
        else:
            if waits_for_app:
                turns.append((AwaitReady(),))
                waits_for_app = set()
            turns += terminal_turns(code)
    if not turns or not isinstance(turns[-1][-1], Finish):
        turns.append((Finish(True),))
    return turns


def terminal_turns(code: str) -> list[Turn]:
    """Plain Python typed into a terminal that closes itself when the program ends."""
    code = re.sub(r"'\{SERVICE_TOKEN:forge\}'", f"open('{TOKEN_FILE}').read().strip()", code)
    assert "\nEOF\n" not in f"\n{code}\n" and "{SERVICE_" not in code, code
    # The oracle runs a solution step with the guest's prefix (pyautogui and time imported): so does this.
    command = f"python3 - <<'EOF'\n{PYAUTOGUI_PREFIX}\n{code}\nEOF\nexit\n"
    return [(OpenTerminal(),), (AwaitTerminal(True),), (Write(command),), (AwaitTerminal(False),)]


def gui_steps(code: str) -> list[Step] | None:
    """The GUI steps of pyautogui code made only of key presses, typing and clicks; None for other code."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    steps: list[Step] = []
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "pyautogui"
        ):
            return None
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        name = call.func.attr
        if name == "hotkey":
            steps.append(Keys((tuple(args),)))
        elif name == "press":
            steps.append(Keys(((args[0],),) * int(kwargs.get("presses", 1))))
        elif name in ("write", "typewrite"):
            steps.append(Write(args[0]))
        elif name == "click":
            steps.append(Click(int(args[0]), int(args[1])))
        else:
            return None
    return steps


# --- one conversation ------------------------------------------------------------------------------


@dataclass
class Screens:
    """What the scripted model remembers of the screens around a terminal."""

    baseline: Image.Image | None = None  # the screen when it pressed ctrl+alt+t
    title: tuple[int, int, int, int] | None = None  # the terminal's title bar: top, bottom, left, right
    previous: Image.Image | None = None  # the last screen, while waiting for an application
    polls: int = 0
    since: float = 0.0  # when the current wait began (time.monotonic)
    pressed: float = 0.0  # when ctrl+alt+t was last pressed


@dataclass
class Conversation:
    """One task's scripted side: the next turn, given the screen the model was just shown."""

    task_id: str
    turns: list[Turn]
    index: int = 0
    screens: Screens = field(default_factory=Screens)
    answered: int = 0  # answers delivered (200s)
    dropped: int = 0  # answers the runner had to drop (refused, cut)
    notes: dict[str, Any] = field(default_factory=dict)  # what a server saw, for the tests to assert

    def next_turn(self, screen: Image.Image | None) -> Turn:
        while True:
            turn = self.turns[min(self.index, len(self.turns) - 1)]
            first = turn[0]
            if isinstance(first, AwaitTerminal | AwaitReady | Settle):
                waited = self._wait(first, screen)
                if waited is None:
                    self.index += 1
                    self.screens.polls = 0
                    continue
                return waited
            if isinstance(first, OpenTerminal):
                self.screens.baseline = screen
                self.screens.pressed = time.monotonic()
            self.index += 1
            return turn

    def _wait(self, step: AwaitTerminal | AwaitReady | Settle, screen: Image.Image | None) -> Turn | None:
        """None when what ``step`` waits for is on ``screen``; else the turn to answer meanwhile."""
        screens = self.screens
        if screen is not None and self._seen(step, screen):
            screens.previous = None
            return None
        now = time.monotonic()
        if screens.polls == 0:
            screens.since = now
        screens.polls += 1
        waited = now - screens.since
        give_up = {AwaitReady: READY_GIVE_UP_S, Settle: SETTLE_GIVE_UP_S}.get(type(step))
        if give_up is not None and waited > give_up:
            screens.previous = None
            return None
        if waited > MAX_WAIT_S:
            raise AssertionError(f"{self.task_id}: waited {waited:.0f} s ({screens.polls} looks) for {step}")
        if isinstance(step, AwaitTerminal) and step.open and now - screens.pressed > REPRESS_S:
            # No terminal yet: press ctrl+alt+t again, as a person would.
            screens.baseline = screen
            screens.pressed = now
            return (OpenTerminal(),)
        return (Pause(POLL_S),)

    def _seen(self, step: AwaitTerminal | AwaitReady | Settle, screen: Image.Image) -> bool:
        screens = self.screens
        if isinstance(step, AwaitReady | Settle):
            previous, screens.previous = screens.previous, screen
            still = previous is not None and changed_share(previous, screen) < STILL
            if isinstance(step, Settle):
                return still and not blank(screen)
            return still and bool(title_bars(screen)) and screens.polls >= READY_POLLS
        if step.open:
            assert screens.baseline is not None, "no screen before ctrl+alt+t"
            before = title_bars(screens.baseline)
            width = screen.size[0]
            new = [
                bar
                for bar in title_bars(screen)
                if TERMINAL_WIDTH[0] * width <= bar[3] - bar[2] <= TERMINAL_WIDTH[1] * width
                and not any(_same_bar(bar, old) for old in before)
            ]
            if new:
                screens.title = new[0]
            return bool(new)
        assert screens.title is not None
        return not any(_same_bar(bar, screens.title) for bar in title_bars(screen))


def title_bars(image: Image.Image) -> list[tuple[int, int, int, int]]:
    """The title bars of focused windows (openbox's active title bar is a blue band): top, bottom, left, right."""
    rgb = np.asarray(image.convert("RGB"), dtype=np.int16)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    blue = (b >= 190) & (b - r >= 55) & (g - r >= 20) & (b - g >= 20)
    width, height = image.size
    rows = blue.sum(axis=1) >= 0.12 * width
    bars = []
    y = 0
    while y < height:
        if not rows[y]:
            y += 1
            continue
        top = y
        while y < height and rows[y]:
            y += 1
        if MIN_BAR * height <= y - top <= MAX_BAR * height:
            columns = np.flatnonzero(blue[top:y].sum(axis=0) >= (y - top) / 2)
            bars.append((top, y, int(columns[0]), int(columns[-1]) + 1))
    return bars


def _same_bar(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    """One window's title bar in both: the same rows and the same extent (a window opened over another's
    title bar row is another window)."""
    return all(abs(x - y) <= 6 for x, y in zip(a, b))


def blank(image: Image.Image) -> bool:
    """Nearly all one colour: the bare desktop, or a window whose content has not come yet."""
    pixels = np.asarray(image.convert("RGB"))[::4, ::4].reshape(-1, 3)
    _, counts = np.unique(pixels // 8, axis=0, return_counts=True)
    return bool(counts.max() / len(pixels) > BLANK)


def changed_share(a: Image.Image, b: Image.Image) -> float:
    """The share of pixels that differ between two screens of one size (1.0 for different sizes)."""
    if a.size != b.size:
        return 1.0
    first = np.asarray(a.convert("RGB"), dtype=np.int16)
    second = np.asarray(b.convert("RGB"), dtype=np.int16)
    return float((np.abs(first - second).max(axis=2) > 16).mean())
