"""``desktop_env.controllers.gitlab`` as task files import it, re-exported from
:mod:`pytest_osworld.v2.api.gitlab`."""

from __future__ import annotations

from pytest_osworld.v2.api.gitlab import IMPORT_WAIT_S as IMPORT_WAIT_S
from pytest_osworld.v2.api.gitlab import TIMEOUT_S as TIMEOUT_S
from pytest_osworld.v2.api.gitlab import TOKEN_ENV as TOKEN_ENV
from pytest_osworld.v2.api.gitlab import URL_ENV as URL_ENV
from pytest_osworld.v2.api.gitlab import (
    ImportTimeout,
    create_user_and_get_client,
    delete_user,
    get_gitlab_admin_client,
    get_user_client,
    import_project_from_github,
)
from pytest_osworld.v2.api.gitlab import __getattr__ as __getattr__

__all__ = [
    "ImportTimeout",
    "create_user_and_get_client",
    "delete_user",
    "get_gitlab_admin_client",
    "get_user_client",
    "import_project_from_github",
]
