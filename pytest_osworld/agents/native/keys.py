"""Key names of the native protocols, as pyautogui names the guest can press.

Anthropic's computer tool (and the tool-calling runner's ``computer`` function) names keys as xdotool
does: X keysyms (``Return``, ``Page_Down``, ``KP_Enter``, ``ctrl``) joined by ``+`` into a chord, chords
separated by spaces into a sequence (``ctrl+a Delete``). OpenAI's computer-use model names them in
capitals (``CTRL``, ``ENTER``, ``ARROWUP``), one chord per ``keypress``. UI-TARS writes lower-case names
separated by spaces (``ctrl c``). Every name maps onto pyautogui's, or the action is refused with the
name: pyautogui silently skips a key it does not know, which would hide a wrong answer.
"""

from __future__ import annotations

import string

from pytest_osworld.agents.computer13 import KEY_NAMES
from pytest_osworld.agents.parsing import ParseError

Chord = tuple[str, ...]  # pyautogui key names pressed together, in order (released in reverse)

# Lower-cased keysym (or common spelling) -> pyautogui name. Single printable characters map to
# themselves and are not listed.
_ALIASES: dict[str, str] = {
    "return": "enter",
    "kp_enter": "enter",
    "linefeed": "enter",
    "escape": "esc",
    "iso_left_tab": "tab",
    "backspace": "backspace",
    "del": "delete",
    "prior": "pageup",
    "page_up": "pageup",
    "next": "pagedown",
    "page_down": "pagedown",
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "kp_up": "up",
    "kp_down": "down",
    "kp_left": "left",
    "kp_right": "right",
    "kp_home": "home",
    "kp_end": "end",
    "kp_prior": "pageup",
    "kp_next": "pagedown",
    "kp_insert": "insert",
    "kp_delete": "delete",
    "control": "ctrl",
    "control_l": "ctrlleft",
    "control_r": "ctrlright",
    "alt_l": "altleft",
    "alt_r": "altright",
    "option": "alt",
    "shift_l": "shiftleft",
    "shift_r": "shiftright",
    "super": "win",
    "super_l": "winleft",
    "super_r": "winright",
    "meta": "win",
    "meta_l": "winleft",
    "meta_r": "winright",
    "cmd": "win",
    "command": "win",
    "caps_lock": "capslock",
    "num_lock": "numlock",
    "scroll_lock": "scrolllock",
    "print": "printscreen",
    "sys_req": "printscreen",
    "menu": "apps",
    "kp_add": "add",
    "kp_subtract": "subtract",
    "kp_multiply": "multiply",
    "kp_divide": "divide",
    "kp_decimal": "decimal",
    "kp_separator": "separator",
    "minus": "-",
    "plus": "+",
    "equal": "=",
    "comma": ",",
    "period": ".",
    "slash": "/",
    "backslash": "\\",
    "semicolon": ";",
    "colon": ":",
    "apostrophe": "'",
    "quoteright": "'",
    "quotedbl": '"',
    "grave": "`",
    "quoteleft": "`",
    "asciitilde": "~",
    "exclam": "!",
    "at": "@",
    "numbersign": "#",
    "dollar": "$",
    "percent": "%",
    "asciicircum": "^",
    "ampersand": "&",
    "asterisk": "*",
    "parenleft": "(",
    "parenright": ")",
    "underscore": "_",
    "bracketleft": "[",
    "bracketright": "]",
    "braceleft": "{",
    "braceright": "}",
    "bar": "|",
    "less": "<",
    "greater": ">",
    "question": "?",
    "xf86audioplay": "playpause",
    "xf86audionext": "nexttrack",
    "xf86audioprev": "prevtrack",
    "xf86audiomute": "volumemute",
    "xf86audioraisevolume": "volumeup",
    "xf86audiolowervolume": "volumedown",
}
_ALIASES.update({f"kp_{n}": f"num{n}" for n in range(10)})
_PRINTABLE = frozenset(string.printable) - frozenset("\x0b\x0c")


def key_name(name: str, *, letters_lower: bool = False) -> str:
    """The pyautogui name of one key. A single character keeps its case (``A`` is shift+a, as xdotool
    types it) unless ``letters_lower``: OpenAI's ``keypress`` writes the plain A key as ``A``.
    Raises :class:`ParseError` naming a key pyautogui cannot press."""
    if len(name) == 1 and name in _PRINTABLE:
        return name.lower() if letters_lower else name
    lowered = name.strip().lower()
    mapped = _ALIASES.get(lowered, lowered)
    if mapped not in KEY_NAMES:
        raise ParseError(f"unknown key name {name!r}")
    return mapped


def xdotool_sequence(text: str) -> list[Chord]:
    """``ctrl+shift+t``, ``Return``, ``ctrl+a Delete``: xdotool's ``key`` argument as chords, in order."""
    chords = [tuple(key_name(n) for n in _chord_names(word)) for word in text.split()]
    if not chords:
        raise ParseError("no key given")
    return chords


def _chord_names(word: str) -> list[str]:
    """``ctrl+s`` -> ``["ctrl", "s"]``; a ``+`` that is the key itself (``+``, ``ctrl++``) stays one."""
    if word == "+":
        return ["+"]
    if word.endswith("++"):
        return [*word[:-2].split("+"), "+"]
    names = word.split("+")
    if any(not n for n in names):
        raise ParseError(f"key chord {word!r} has an empty key name")
    return names


def cua_chord(keys: list[str]) -> Chord:
    """OpenAI's ``keypress`` keys (``["CTRL", "A"]``) as one chord."""
    if not keys:
        raise ParseError("keypress needs at least one key")
    return tuple(key_name(k, letters_lower=True) for k in keys)


def spaced_chord(text: str) -> Chord:
    """UI-TARS's ``hotkey(key='ctrl c')``: lower-case names separated by spaces (or ``+``), one chord."""
    names = text.replace("+", " ").split() if text.strip() != "+" else ["+"]
    if not names:
        raise ParseError("hotkey needs a key")
    return tuple(key_name(n, letters_lower=True) for n in names)
