"""``desktop_env.evaluators.getters`` as task files import it, re-exported from
:mod:`pytest_osworld.v2.api.getters`."""

from __future__ import annotations

from pytest_osworld.v2.api.getters import Getter, get_state_file_with_cookie, get_state_with_cookie, logger
from pytest_osworld.v2.api.getters import __getattr__ as __getattr__

__all__ = ["Getter", "get_state_file_with_cookie", "get_state_with_cookie", "logger"]
