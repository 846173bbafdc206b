"""git over the forge's bare repositories: refs, commits written without a work tree, GitLab's commit
objects, three-way merges. Always with the forge's own identity and no user or system configuration,
so the same on every machine."""

from __future__ import annotations

import os
import subprocess
from typing import Any

from .config import ROOT

_COMMIT_FORMAT = "%H%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B%x1e"


class Git:
    """git commands with ``home`` as their HOME (the forge's data folder)."""

    def __init__(self, home: str) -> None:
        self.home = home

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin",
            "HOME": self.home,
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": ROOT["name"],
            "GIT_AUTHOR_EMAIL": ROOT["email"],
            "GIT_COMMITTER_NAME": ROOT["name"],
            "GIT_COMMITTER_EMAIL": ROOT["email"],
        }
        env.update(extra or {})
        return env

    def run(self, repo: str, *args: str, data: bytes | None = None, ok: tuple[int, ...] = (0,), date: str = "") -> str:
        extra = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else None
        proc = subprocess.run(
            ["git", f"--git-dir={repo}", *args], input=data, capture_output=True, env=self.env(extra), timeout=120
        )
        if proc.returncode not in ok:
            message = proc.stderr.decode(errors="replace")[-300:]
            raise RuntimeError(f"git {args[0]} failed ({proc.returncode}): {message}")
        return proc.stdout.decode(errors="replace")

    def ok(self, repo: str, *args: str) -> bool:
        proc = subprocess.run(["git", f"--git-dir={repo}", *args], capture_output=True, env=self.env(), timeout=120)
        return proc.returncode == 0

    def init_bare(self, repo: str, branch: str) -> None:
        """A new bare repository that accepts pushes over HTTP."""
        proc = subprocess.run(
            ["git", "init", "--bare", "-q", f"--initial-branch={branch}", repo],
            capture_output=True,
            env=self.env(),
            timeout=60,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"git init failed: {proc.stderr.decode(errors='replace')[-300:]}")
        self.run(repo, "config", "http.receivepack", "true")

    def resolve(self, repo: str, ref: str) -> str | None:
        """The commit a ref (branch, tag, sha) names, or None."""
        if not ref or ref.startswith("-"):
            return None
        out = self.run(repo, "rev-parse", "--verify", "--quiet", ref + "^{commit}", ok=(0, 1, 128)).strip()
        return out or None

    def branch_head(self, repo: str, name: str) -> str | None:
        if not name or name.startswith("-"):
            return None
        ref = f"refs/heads/{name}^{{commit}}"
        out = self.run(repo, "rev-parse", "--verify", "--quiet", ref, ok=(0, 1, 128)).strip()
        return out or None

    def valid_branch(self, name: str) -> bool:
        if not name or name.startswith("-"):
            return False
        proc = subprocess.run(
            ["git", "check-ref-format", "--branch", name], capture_output=True, env=self.env(), cwd=self.home
        )
        return proc.returncode == 0

    def branch_names(self, repo: str) -> list[str]:
        return sorted(self.run(repo, "for-each-ref", "--format=%(refname:strip=2)", "refs/heads").split())

    def blob(self, repo: str, blob: str) -> bytes:
        proc = subprocess.run(
            ["git", f"--git-dir={repo}", "cat-file", "blob", blob], capture_output=True, env=self.env()
        )
        return proc.stdout

    def write_commit(self, repo: str, files: dict[str, str], message: str, parents: list[str], date: str = "") -> str:
        """A commit of ``files`` (flat: name -> text) on ``parents``, written without a work tree."""
        entries = []
        for name, text in sorted(files.items()):
            blob = self.run(repo, "hash-object", "-w", "--stdin", data=text.encode()).strip()
            entries.append(f"100644 blob {blob}\t{name}\n")
        tree = self.run(repo, "mktree", data="".join(entries).encode()).strip()
        return self.commit_tree(repo, tree, parents, message, date)

    def commit_tree(self, repo: str, tree: str, parents: list[str], message: str, date: str = "") -> str:
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self.run(repo, *args, "-m", message, date=date).strip()

    def commits(self, repo: str, *revs: str, walk: bool = False) -> list[dict[str, Any]]:
        """GitLab's commit objects of ``revs`` (or of their history when ``walk``), newest first."""
        if not revs:
            return []
        args = ["log", f"--format={_COMMIT_FORMAT}"] if walk else ["show", "-s", f"--format={_COMMIT_FORMAT}"]
        out = self.run(repo, *args, *revs, "--")
        found = []
        for record in out.split("\x1e"):
            record = record.lstrip("\n")
            if not record:
                continue
            sha, parents, an, ae, ad, cn, ce, cd, body = record.split("\x00")
            message = body.rstrip("\n") + "\n"
            found.append(
                {
                    "id": sha,
                    "short_id": sha[:8],
                    "created_at": cd,
                    "parent_ids": parents.split(),
                    "title": message.split("\n", 1)[0],
                    "message": message,
                    "author_name": an,
                    "author_email": ae,
                    "authored_date": ad,
                    "committer_name": cn,
                    "committer_email": ce,
                    "committed_date": cd,
                    "trailers": {},
                }
            )
        return found

    def merge_tree(self, repo: str, target: str, source: str) -> tuple[str, bool]:
        """The tree of merging two commits, and whether it merged cleanly (a real three-way merge)."""
        proc = subprocess.run(
            ["git", f"--git-dir={repo}", "merge-tree", "--write-tree", "--no-messages", target, source],
            capture_output=True,
            env=self.env(),
            timeout=120,
        )
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"git merge-tree failed: {proc.stderr.decode(errors='replace')[-300:]}")
        return proc.stdout.decode().split("\n", 1)[0].strip(), proc.returncode == 0
