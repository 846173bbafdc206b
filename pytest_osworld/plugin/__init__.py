"""pytest-osworld's pytest integration: every hook, option, collector and fixture lives in this package.

Registered through the ``pytest11`` entry point; the modules below are its plugins, each thin and
delegating to plain modules of the project:

- ``run``: the session's state (settings, run id, collected tasks, the run manifest's owner) with the
  typed accessors every other module here uses;
- ``hooks``: options, configuration, collection of task inputs, selection (skips, shards), the run
  manifest's two moments (start and end), the report header;
- ``items``: ``TaskFile`` (a ``pytest.File``) yielding ``TaskItem``s, and the test function they run;
- ``v2``: ``V2TaskFile`` yielding ``V2TaskItem``s for OSWorld-V2 splits and task files (read without
  importing them, pinned) and their test function, imported by ``hooks``;
- ``fixtures``: the fixtures of an episode;
- ``sandbox``: the sandbox fixtures, the check before the session and the sweeps after it;
- ``keep``: ``--osworld-keep-failed``: sandboxes of failed or masked tasks kept until the run's end;
- ``services``: the shared services' fixtures, the skip of undefined ones, their removal at the end;
- ``judge``: the LLM judge of OSWorld-V2 tasks: its session fixture, the preflight (``llm_judge`` items
  skipped when no judge is configured, masked ``judge_error`` when it does not answer), its usage line
  in the terminal summary;
- ``results`` and ``reporting``: outcomes into records, resume, the summary, the gate, report plugins;
- ``resume``: ``--osworld-resume``, continuing an earlier run;
- ``outcomes``: the outcome table (how an episode's end becomes a pytest outcome and back);
- ``html``: the pytest-html columns and extras (registered only with pytest-html);
- ``live``: ``--osworld-live``, the run's live page: its server in the run's owner, each process's
  progress published to it, an episode's observer (imported by ``fixtures`` and ``v2``).
"""

# A plugin that another one imports comes first: pytest rewrites asserts only in plugin modules it
# imports itself, and warns about one imported before it.
pytest_plugins = [
    "pytest_osworld.plugin.keep",
    "pytest_osworld.plugin.sandbox",
    "pytest_osworld.plugin.services",
    "pytest_osworld.plugin.judge",
    "pytest_osworld.plugin.live",
    "pytest_osworld.plugin.hooks",
    "pytest_osworld.plugin.fixtures",
    "pytest_osworld.plugin.results",
]
