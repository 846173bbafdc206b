"""``desktop_env.controllers.website`` as task files import it, re-exported from
:mod:`pytest_osworld.v2.api.website`."""

from __future__ import annotations

from pytest_osworld.v2.api.website import (
    COOKIE_FILE,
    OFFICIAL_HOST_SUFFIX,
    WEBSITE_SERVICE,
    build_website_url,
    prepare_stateful_website_urls,
    resolve_website_url,
)
from pytest_osworld.v2.api.website import COOKIE_NAME as COOKIE_NAME
from pytest_osworld.v2.api.website import STATE_PATH as STATE_PATH
from pytest_osworld.v2.api.website import TIMEOUT_S as TIMEOUT_S
from pytest_osworld.v2.api.website import StatePayload as StatePayload
from pytest_osworld.v2.api.website import __getattr__ as __getattr__
from pytest_osworld.v2.api.website import is_official_host as is_official_host
from pytest_osworld.v2.api.website import logger as logger
from pytest_osworld.v2.api.website import site_of as site_of
from pytest_osworld.v2.api.website import to_host_url as to_host_url

__all__ = [
    "COOKIE_FILE",
    "OFFICIAL_HOST_SUFFIX",
    "WEBSITE_SERVICE",
    "build_website_url",
    "prepare_stateful_website_urls",
    "resolve_website_url",
]
