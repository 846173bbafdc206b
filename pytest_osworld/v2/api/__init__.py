"""The OSWorld-V2 task API, the project's implementation: what task files reach through upstream's
``desktop_env`` and ``evaluation_examples`` names (``v2/upstream/``), the state of the running task,
the ``env`` its ``evaluate(env)`` receives, and the loader that imports a task file with the API in place."""
