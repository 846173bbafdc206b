"""``desktop_env.file_source`` as task files import it: re-exported from :mod:`pytest_osworld.v2.api.assets`."""

from __future__ import annotations

from pytest_osworld.v2.api.assets import BASE_ENV, DEFAULT_BASE, asset, file_base

__all__ = ["BASE_ENV", "DEFAULT_BASE", "asset", "file_base"]
