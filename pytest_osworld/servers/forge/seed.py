"""The forge's seed, put in place at start and by every reset (``POST /api/reset``): the user
``root`` (id 1, an administrator) with the public project ``root/demo`` (``README.md`` with the typo
"recieve" and ``hello.py`` on ``main``, a branch ``add-greeting``, one open issue) and the private
project ``root/notes``. Seed commits have fixed dates, so their ids are the same after every reset."""

from __future__ import annotations

import os
import shutil

from .config import ROOT, SEED_TIME
from .issues import new_issue
from .state import Forge, Store

_README = """# demo

A small demo project of the code forge.

Run `python3 hello.py` to recieve a greeting.
"""
_HELLO = '''"""Prints a greeting."""


def greet(name: str = "world") -> str:
    return f"Hello, {name}!"


if __name__ == "__main__":
    print(greet())
'''
_HELLO_BY_NAME = '''"""Prints a greeting, to the name given on the command line if any."""

import sys


def greet(name: str = "world") -> str:
    return f"Hello, {name}!"


if __name__ == "__main__":
    print(greet(*sys.argv[1:2]))
'''


def seed(forge: Forge) -> None:
    """Wipe everything (users, projects, imports under way), then create the seed's projects, commits,
    branches and issue in a new store."""
    git, config = forge.git, forge.config
    with forge.lock:
        shutil.rmtree(config.repos, ignore_errors=True)
        shutil.rmtree(config.imports, ignore_errors=True)  # imports under way find their forge gone and stop
        os.makedirs(config.repos, exist_ok=True)
        store = forge.store = Store(config.repos, git)
        root = store.add_user(**{k: v for k, v in ROOT.items() if k != "id"}, is_admin=True, created_at=SEED_TIME)
        demo = store.create_project(
            root,
            "demo",
            "demo",
            description="A small demo project",
            visibility="public",
            created_at=SEED_TIME,
        )
        repo = store.repo(demo)
        first = git.write_commit(repo, {"README.md": _README}, "Initial commit", [], "2026-01-01T10:00:00Z")
        files = {"README.md": _README, "hello.py": _HELLO}
        main = git.write_commit(repo, files, "Add hello.py", [first], "2026-01-01T10:05:00Z")
        by_name = {**files, "hello.py": _HELLO_BY_NAME}
        message = "Greet by name from the command line"
        greeting = git.write_commit(repo, by_name, message, [main], "2026-01-01T10:10:00Z")
        git.run(repo, "update-ref", "refs/heads/main", main)
        git.run(repo, "update-ref", "refs/heads/add-greeting", greeting)
        store.issues[demo["id"]].append(
            new_issue(
                store,
                demo,
                1,
                "Typo in the README",
                'README.md says "recieve"; it should say "receive".',
                ["documentation"],
                SEED_TIME,
            )
        )
        notes = store.create_project(
            root, "notes", "notes", description="Private notes", visibility="private", created_at=SEED_TIME
        )
        repo = store.repo(notes)
        readme = "# notes\n\nPrivate notes of root.\n"
        first = git.write_commit(repo, {"README.md": readme}, "Initial commit", [], "2026-01-01T10:00:00Z")
        git.run(repo, "update-ref", "refs/heads/main", first)
