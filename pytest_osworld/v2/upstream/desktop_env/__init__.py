"""``desktop_env`` as OSWorld-V2 task files import it: upstream's module layout, each module
re-exporting the project's task API (:mod:`pytest_osworld.v2.api`)."""
