"""The run's final state saved as a static page, ``<run_dir>/live.html``, at the end of every run.

The run's owner (the xdist controller or the plain pytest process) writes it once the summary is
written (``plugin/reporting.py``), from the records and that summary (``results/final_page.py``).
"""

from __future__ import annotations

import logging

import pytest

from pytest_osworld.errors import OsworldError
from pytest_osworld.plugin.run import get_run
from pytest_osworld.results.final_page import write_final_page

log = logging.getLogger("pytest_osworld.results")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    from pytest_osworld.plugin import reporting  # the results plugin's state, registered by then

    config = session.config
    if get_run(config).is_worker or config.option.collectonly:
        return
    summary = reporting.state(config).summary
    if summary is None or reporting.state(config).summary_path is None:
        return  # no OSWorld task in this session, or no summary written
    try:
        write_final_page(get_run(config).run_dir, summary)
    except (OSError, ValueError, OsworldError) as exc:  # the summary and the records are written already
        log.warning("could not write the run's final page: %s", exc)
