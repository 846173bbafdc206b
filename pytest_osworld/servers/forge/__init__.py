"""The ``forge`` service: a small code forge of the project's own, run by python3 inside a container
(``python3 -m osworld_servers.forge``).

- Git over HTTP (git's smart protocol: clone, fetch, push) at ``/<namespace>/<project>.git``, served by
  ``git http-backend`` as CGI over bare repositories on disk (``git_http``). A push, and any access to a
  private project, needs HTTP basic auth: any user name, the token as password (``auth``).
- A subset of GitLab's REST API v4 at ``/api/v4``, with GitLab's field names and status codes
  (``views``), read from and written to the real repositories (``git``): users (``users``); projects
  (``projects``) and their imports (``imports``); branches, files and commits (``repository``); issues
  (``issues``); merge requests, whose merge is a real merge commit (``merge_requests``). Every call
  needs the token, as ``PRIVATE-TOKEN: <token>`` or ``Authorization: Bearer <token>`` (401 without);
  the token is root's, an administrator's, so every call is root's (commits, issues and merges made
  through the API are by root). Lists are paged as GitLab's (``params``): ``X-Page``/``X-Total``/...
  headers and a ``Link`` header. Which handler answers which path: ``routes``; the HTTP side: ``app``.
- ``POST /api/reset`` (with the token) wipes everything (users, projects, imports under way) and puts
  back the seed (``seed``); ``GET /health`` (no token) answers once the seed is in place.

The one state object is ``state.Forge``, made at start (``__main__``) from ``config.Config`` and handed
to every request. Standard library and ``git`` (2.38+, for ``merge-tree --write-tree``) only.
"""
