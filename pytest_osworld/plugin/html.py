"""pytest-html 4: the score and the ending in each row, a mask named as one, and the task's page as
extras: the instruction and the episode's facts (as Allure's parameters), links to the run's summary
and video, the final screenshot and the record.

Registered only when pytest-html is installed and active, so its hooks never reach a plain run.
"""

from __future__ import annotations

import base64
import html
from typing import Any

import pytest

from pytest_osworld.plugin.outcomes import report_info
from pytest_osworld.record import TaskResult
from pytest_osworld.results.task_page import TaskPage
from pytest_osworld.sanitize import scrub


def active(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("html") and bool(getattr(config.option, "htmlpath", None))


def page_html(page: TaskPage) -> str:
    """The instruction, the status message and the facts of the episode, as the Allure page has them."""
    rows = "".join(
        f"<tr><th>{html.escape(name)}</th><td>{html.escape(value)}</td></tr>" for name, value in page.parameters
    )
    message = f'<p class="osworld-message">{html.escape(page.message)}</p>' if page.message else ""
    return (
        f'<div class="osworld-task">{page.description_html}{message}'
        f'<table class="osworld-parameters">{rows}</table></div>'
    )


def extras_for(
    result: TaskResult | None, final_png: bytes | None, page: TaskPage | None = None
) -> list[dict[str, Any]]:
    from pytest_html import extras

    found = []
    if page is not None:
        found.append(extras.html(page_html(page)))
        found += [extras.url(url, name=name) for name, url in page.links]
    if final_png:
        found.append(extras.png(base64.b64encode(final_png).decode("ascii"), name="final screenshot"))
    if result is not None:
        found.append(extras.json(scrub(result.model_dump(mode="json")), name="result.json"))
    return found


def add_extras(report: pytest.TestReport, extras: list[dict[str, Any]]) -> None:
    """Append to pytest-html's ``extras`` of a report (an attribute pytest-html reads off the report)."""
    report.__dict__["extras"] = [*report.__dict__.get("extras", []), *extras]


class HtmlHooks:
    """Two sortable columns: the score (blank without a valid one) and the termination; a masked task's
    result reads "Masked" (pytest-html counts it among the errors, as pytest does).

    pytest-html keys a sortable column by the word after ``col-`` in its cell's class: one word each.
    """

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells.insert(2, '<th class="sortable" data-column-type="osworld_score">Score</th>')
        cells.insert(3, '<th class="sortable" data-column-type="osworld_ending">Ending</th>')

    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        info = report_info(report) or {}
        if info.get("status") == "masked" and cells and 'class="col-result"' in cells[0]:
            cells[0] = '<td class="col-result">Masked</td>'
        score = info.get("score")
        cells.insert(2, f'<td class="col-osworld_score">{"" if score is None else f"{score:g}"}</td>')
        cells.insert(3, f'<td class="col-osworld_ending">{html.escape(str(info.get("termination") or ""))}</td>')
