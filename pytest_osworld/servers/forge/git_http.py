"""Git over HTTP at ``/<namespace>/<project>.git``: git's smart protocol (clone, fetch, push) served by
``git http-backend`` as CGI over the bare repositories. A public project clones without credentials;
a push, or any access to a private project, needs the token (``auth.basic_ok``)."""

from __future__ import annotations

import re
import subprocess
import sys
from email.message import Message
from typing import Any

from .auth import basic_ok
from .config import ROOT, now
from .state import Forge

# The paths git's smart protocol asks for under a repository.
GIT_PATH = re.compile(r"^/([^/]+)/([^/]+?)(?:\.git)?/(info/refs|git-upload-pack|git-receive-pack|HEAD|objects/.+)$")

Reply = tuple[int, bytes, dict[str, str]]


def serve(
    forge: Forge, found: re.Match[str], method: str, query: str, headers: Message, client: str, body: bytes
) -> Reply:
    """The answer to one git request (``found``: its path matched by ``GIT_PATH``) from ``client``."""
    namespace, name, rest = found.groups()
    project = forge.store.by_path(f"{namespace}/{name}")
    push = rest == "git-receive-pack" or (rest == "info/refs" and "service=git-receive-pack" in query)
    authed = basic_ok(forge.config.token, headers)
    if not authed and (push or project is None or project["visibility"] != "public"):
        # Unknown and private projects look alike to a stranger, as on GitLab.
        return (
            401,
            b"HTTP Basic: Access denied\n",
            {"WWW-Authenticate": 'Basic realm="forge"', "Content-Type": "text/plain"},
        )
    if project is None:
        return 404, b"Repository not found\n", {"Content-Type": "text/plain"}
    env = forge.git.env(
        {
            "GIT_PROJECT_ROOT": forge.config.repos,
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": f"/{forge.store.full_path(project)}.git/{rest}",
            "REQUEST_METHOD": method,
            "QUERY_STRING": query,
            "CONTENT_TYPE": str(headers.get("Content-Type", "")),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": client,
        }
    )
    if authed:
        env["REMOTE_USER"] = ROOT["username"]
    if headers.get("Content-Encoding"):
        env["HTTP_CONTENT_ENCODING"] = str(headers["Content-Encoding"])
    if headers.get("Git-Protocol"):
        env["GIT_PROTOCOL"] = str(headers["Git-Protocol"])
    proc = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, timeout=600)
    head, sep, payload = proc.stdout.partition(b"\r\n\r\n")
    if not sep:
        head, sep, payload = proc.stdout.partition(b"\n\n")
    if not sep:
        sys.stderr.write(f"forge: git http-backend failed: {proc.stderr.decode(errors='replace')[-300:]}\n")
        return 500, b"git http-backend failed\n", {"Content-Type": "text/plain"}
    status, answer_headers = 200, {}
    for line in head.decode("latin-1").splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "status":
            status = int(value.split()[0])
        elif key.strip():
            answer_headers[key.strip()] = value.strip()
    if rest == "git-receive-pack":
        with forge.lock:
            _after_push(forge, project)
    return status, payload, answer_headers


def _after_push(forge: Forge, project: dict[str, Any]) -> None:
    """A first push to an empty project sets its default branch, as GitLab does."""
    project["last_activity_at"] = now()
    repo = forge.store.repo(project)
    names = forge.git.branch_names(repo)
    if names and project["default_branch"] not in names:
        project["default_branch"] = "main" if "main" in names else names[0]
        forge.git.run(repo, "symbolic-ref", "HEAD", f"refs/heads/{project['default_branch']}")
