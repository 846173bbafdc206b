"""Imports: a project created with ``import_url`` is cloned into its repository in the background, as
GitLab imports "repository by URL": ``import_status`` is ``scheduled``, then ``started``, then
``finished`` (branches and tags copied, the default branch the source's) or ``failed`` with
``import_error``. Only ``file://``, ``http(s)://`` and ``git://`` URLs are cloned (no credentials
prompt, ``IMPORT_TIMEOUT_S`` at most); credentials in the URL are kept out of the project's JSON, its
``import_error`` and its repository's configuration."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import Any
from urllib.parse import urlsplit

from .config import IMPORT_SCHEMES, IMPORT_TIMEOUT_S, now
from .state import Forge, Store
from .views import safe_url


def start_import(forge: Forge, project: dict[str, Any], url: str) -> None:
    """Clone ``url`` into the new project in the background (called with the forge's lock held)."""
    project["import_url"] = url  # with its credentials: the clone needs them; the JSON shows safe_url
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        scheme = ""
    if scheme not in IMPORT_SCHEMES:
        project["import_status"] = "failed"
        project["import_error"] = f"Import url is blocked: Only allowed schemes are {', '.join(IMPORT_SCHEMES)}"
        return
    project["import_status"] = "scheduled"
    args = (forge, forge.store, project, url)
    worker = threading.Thread(target=run_import, args=args, name=f"import-{project['id']}")
    worker.daemon = True
    worker.start()


def _still_there(forge: Forge, store: Store, project: dict[str, Any]) -> bool:
    """Neither a reset nor a deletion took the project away while its import ran (under the lock)."""
    return forge.store is store and store.projects.get(project["id"]) is project


def _scrub(forge: Forge, message: str, url: str) -> str:
    """git's message without the URL's credentials or the token."""
    message = message.replace(url, safe_url(url))
    for secret in [s for s in (urlsplit(url).password, forge.config.token) if s]:
        message = message.replace(secret, "*****")
    return message


def run_import(forge: Forge, store: Store, project: dict[str, Any], url: str) -> None:
    with forge.lock:
        if not _still_there(forge, store, project):
            return
        project["import_status"] = "started"
        full = store.full_path(project)
    os.makedirs(forge.config.imports, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f"{project['id']}-", dir=forge.config.imports)
    try:
        error = clone(forge, url, work)
        with forge.lock:
            if not _still_there(forge, store, project):
                return
            if error is None:
                install(forge, store, project, work)
                project["import_status"], project["import_error"] = "finished", None
            else:
                detail = _scrub(forge, error, url)
                project["import_status"] = "failed"
                project["import_error"] = f"Error importing repository {safe_url(url)} into {full} - {detail}"
            project["last_activity_at"] = now()
    except Exception as exc:  # noqa: BLE001 - an import that breaks fails, as GitLab's does; the forge goes on
        sys.stderr.write(f"forge: the import of project {project['id']} broke: {_scrub(forge, str(exc), url)}\n")
        with forge.lock:
            if _still_there(forge, store, project):
                project["import_status"], project["import_error"] = "failed", "Error importing repository"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def clone(forge: Forge, url: str, work: str) -> str | None:
    """A bare clone of ``url`` in ``work`` (empty); None when it worked, else git's complaint."""
    env = forge.git.env({"GIT_TERMINAL_PROMPT": "0", "GIT_ALLOW_PROTOCOL": ":".join(IMPORT_SCHEMES)})
    try:
        proc = subprocess.run(
            ["git", "clone", "--bare", "--quiet", "--", url, work],
            capture_output=True,
            env=env,
            timeout=IMPORT_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"the clone did not finish within {IMPORT_TIMEOUT_S} s"
    if proc.returncode == 0:
        return None
    lines = [line.strip() for line in proc.stderr.decode(errors="replace").splitlines() if line.strip()]
    return " ".join(lines[-3:]) or f"git clone failed ({proc.returncode})"


def install(forge: Forge, store: Store, project: dict[str, Any], work: str) -> None:
    """The clone becomes the project's repository (under the lock); its default branch is the source's."""
    git = forge.git
    repo = store.repo(project)
    shutil.rmtree(repo, ignore_errors=True)
    os.replace(work, repo)
    git.run(repo, "config", "--remove-section", "remote.origin", ok=(0, 1, 128))  # the URL may hold credentials
    git.run(repo, "config", "http.receivepack", "true")
    names = git.branch_names(repo)
    head = git.run(repo, "symbolic-ref", "--quiet", "--short", "HEAD", ok=(0, 1, 128)).strip()
    if names:
        project["default_branch"] = head if head in names else "main" if "main" in names else names[0]
    git.run(repo, "symbolic-ref", "HEAD", f"refs/heads/{project['default_branch']}")
