"""The metric registry: lookup, unknown names, and optional dependencies reported as reasons."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_osworld.errors import EvaluatorUnavailable
from pytest_osworld.evaluation import metrics
from pytest_osworld.evaluation.metrics import _registry

TOP_30_AND_TEST_SMALL = """
compare_table compare_pptx_files check_direct_json_object check_include_exclude exact_match
compare_docx_files compare_pdfs is_expected_url_pattern_match check_list compare_images
check_json_settings compare_text_file is_extension_installed is_expected_active_tab
compare_docx_tables diff_text_file check_mp3_meta is_expected_tabs check_config_status compare_csv
check_thunderbird_prefs is_expected_bookmarks check_structure_sim compare_audios
compare_line_spacing compare_config compare_archive check_json compare_image_text
compare_image_list is_in_list literal_match is_in_vm_clickboard file_contains check_line_number
is_vlc_playing check_csv check_accessibility_tree is_cookie_deleted is_shortcut_on_desktop
match_in_list check_tabstops check_brightness_decrease_and_structure_sim
check_saturation_increase_and_structure_sim check_image_stretch_and_center
""".split()


def test_every_required_metric_is_registered() -> None:
    assert metrics.missing_metrics(TOP_30_AND_TEST_SMALL) == []
    for name in TOP_30_AND_TEST_SMALL:
        assert callable(metrics.get_metric(name))


def test_unknown_metric_raises_key_error_and_is_reported_missing() -> None:
    with pytest.raises(KeyError, match="no_such_metric"):
        metrics.get_metric("no_such_metric")
    assert metrics.missing_metrics(["exact_match", "no_such_metric", "no_such_metric", "other"]) == [
        "no_such_metric",
        "other",
    ]
    with pytest.raises(KeyError):
        metrics.metric_unavailable_reason("no_such_metric")


def test_infeasible_is_left_to_the_evaluator() -> None:
    assert metrics.missing_metrics(["infeasible"]) == []
    assert metrics.metric_unavailable_reason("infeasible") is None
    with pytest.raises(KeyError, match="evaluator"):
        metrics.get_metric("infeasible")


def test_available_metric_has_no_reason() -> None:
    assert metrics.metric_unavailable_reason("exact_match") is None


def test_metric_with_missing_optional_dependency_reports_pip_reason() -> None:
    @metric_for_test("needs_missing_lib", requires=(("surely_not_installed_mod", "surely-not-installed"),))
    def needs_missing_lib(result: object, expected: object = None) -> float:
        return 1.0

    try:
        reason = metrics.metric_unavailable_reason("needs_missing_lib")
        assert reason == "metric 'needs_missing_lib' needs pip install surely-not-installed"
        assert metrics.unavailable_metrics(["needs_missing_lib", "exact_match"]) == {"needs_missing_lib": reason}
        # Known, so not "missing": the task is skipped with the reason instead.
        assert metrics.missing_metrics(["needs_missing_lib"]) == []
    finally:
        metrics.METRICS.pop("needs_missing_lib")
        _registry._REQUIREMENTS.pop("needs_missing_lib")


def test_require_raises_metric_unavailable_with_reason() -> None:
    with pytest.raises(EvaluatorUnavailable, match="needs pip install surely-not-installed"):
        _registry.require(("surely_not_installed_mod", "surely-not-installed"))
    _registry.require(("json", "json"))  # importable: no error


def test_duplicate_registration_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        metrics.metric("exact_match")(lambda r, e=None: 0.0)


def metric_for_test(name: str, requires: tuple[tuple[str, str], ...]) -> Callable[[metrics.MetricFn], metrics.MetricFn]:
    return metrics.metric(name, requires=requires)


def test_ocr_metric_is_known_but_reports_its_missing_dependency() -> None:
    from pytest_osworld.evaluation.metrics._registry import module_available

    if module_available("easyocr"):
        pytest.skip("easyocr is installed here")
    assert metrics.missing_metrics(["compare_image_text"]) == []
    assert metrics.metric_unavailable_reason("compare_image_text") == (
        "metric 'compare_image_text' needs pip install easyocr"
    )


def test_every_registered_metric_has_tests_of_its_own() -> None:
    # Each metric is called by name ("<name>") in the metric tests, on real files of its kind.
    from pathlib import Path

    text = "".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.glob("test_*.py"))
    untested = [name for name in sorted(metrics.METRICS) if f'"{name}"' not in text]
    assert untested == []
