"""Upstream's module names, as OSWorld-V2 task files import them: ``desktop_env`` and
``evaluation_examples``. While a task file is loaded against the project's API, the loader
(:mod:`pytest_osworld.v2.api.loader`) makes ``desktop_env.x`` resolve to ``desktop_env.x`` here.

Every module under this package only re-exports the task API of :mod:`pytest_osworld.v2.api` (and the
simulated user of :mod:`pytest_osworld.v2.llm.user_sim`); it holds no implementation, and nothing else
of the package imports it (``tests/v2/test_upstream_names.py`` checks both).
"""
