"""OSWorld-V2, one package in parts:

- ``reading/``: V2 task files and splits read statically, never imported (the task, its fields, its
  markers, the release's task-hash pins);
- ``llm/``: the LLM endpoints of an evaluation: the judge's and the simulated user's settings, their
  clients, the judge (each call recorded) and the simulated user;
- ``api/``: the task API a task file runs against (setup controller, websites, GitLab, getters,
  metrics, scoring helpers, ``BaseTask``), the running task's state, the ``env`` of ``evaluate(env)``
  and the loader that imports a task file;
- ``upstream/``: upstream's module names (``desktop_env``, ``evaluation_examples``) re-exporting ``api``,
  for task files only;
- ``episode.py``: ``V2Episode``, v1's episode with a V2 task's setup, phases, simulated user and judge.
"""
