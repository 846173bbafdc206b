"""``desktop_env.controllers.setup`` as task files import it, re-exported from
:mod:`pytest_osworld.v2.api.setup_controller`."""

from __future__ import annotations

from pytest_osworld.v2.api.setup_controller import SetupController

__all__ = ["SetupController"]
