"""Scores as OSWorld's ``DesktopEnv.evaluate`` returns them, through real getters on a real desktop.

Upstream passes a metric's number on untouched: no clamping to [0, 1]. One metric gives its own
value; ``and`` stops only at an exact 0 and otherwise takes the mean, ``or`` stops only at an exact
1 and otherwise takes the max, negative and fractional values included.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageOps

from pytest_osworld.evaluation.evaluate import evaluate
from pytest_osworld.evaluation.metrics import get_metric
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.tasks.model import Task
from tests.metrics.metric_files import gradient_image, write_pdf
from tests.support.desktop import Desktop
from tests.support.desktop_fixtures import make_context
from tests.support.taskfactory import task as make_task

pytestmark = pytest.mark.docker

GOLD_URL = "https://files.example.invalid/parity/gold.png"
BLANK_DECK_URL = "https://files.example.invalid/parity/blank.pptx"
BLANK_PDF_URL = "https://files.example.invalid/parity/blank.pdf"


def task(evaluator: dict[str, Any]) -> Task:
    return Task.model_validate(make_task(f"parity-eval-{time.monotonic_ns()}", evaluator=evaluator))


def image_result(name: str) -> dict[str, Any]:
    return {"type": "vm_file", "path": f"~/parity/{name}", "dest": name}


GOLD = {"type": "cloud_file", "path": GOLD_URL, "dest": "gold.png"}
ONE = {
    "func": "exact_match",
    "result": {"type": "vm_command_line", "command": ["printf", "%s", "ok"]},
    "expected": {"type": "rule", "rules": {"expected": "ok"}},
}


@pytest.fixture
def ctx(shared_desktop: Desktop, tmp_path: Path) -> TaskContext:
    """Images in the guest whose SSIM against the gold image is negative, fractional and 1."""
    made = make_context(shared_desktop, tmp_path, offline=True)
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    gold = gradient_image(64, 48)
    gold.save(pictures / "gold.png")
    ImageOps.invert(gold).save(pictures / "inverted.png")
    noise = np.random.default_rng(0).integers(-60, 60, (48, 64, 3))
    noisy = np.clip(np.asarray(gold, dtype=np.int64) + noise, 0, 255).astype(np.uint8)
    Image.fromarray(noisy, "RGB").save(pictures / "noisy.png")
    for name in ("inverted.png", "noisy.png", "gold.png"):
        made.guest.upload(f"~/parity/{name}", (pictures / name).read_bytes())
    made.assets.put_bytes(GOLD_URL, (pictures / "gold.png").read_bytes())
    return made


def ssim_of(ctx: TaskContext, name: str) -> float:
    """The metric's own number for a guest image against the gold one (OSWorld's SSIM)."""
    local = ctx.cache_dir / f"ssim-{name}"
    data = ctx.guest.file(f"~/parity/{name}")
    assert data is not None
    local.write_bytes(data)
    return float(get_metric("compare_images")(str(local), str(ctx.assets.path(GOLD_URL))))


def test_one_metric_gives_its_own_number_negative_or_fractional(ctx: TaskContext) -> None:
    negative = evaluate(
        ctx, task({"func": "compare_images", "result": image_result("inverted.png"), "expected": GOLD}), "DONE"
    )
    assert negative.score == pytest.approx(-0.1638787, abs=1e-6)  # upstream returns it as it is
    assert negative.metric_scores == [negative.score]
    assert negative.score == ssim_of(ctx, "inverted.png")
    fractional = evaluate(
        ctx, task({"func": "compare_images", "result": image_result("noisy.png"), "expected": GOLD}), "DONE"
    )
    assert 0.0 < fractional.score < 1.0 and fractional.score == ssim_of(ctx, "noisy.png")


def three(conj: str, names: tuple[str, ...], with_one: bool = False) -> Task:
    funcs: list[Any] = ["compare_images"] * len(names)
    results: list[Any] = [image_result(n) for n in names]
    expecteds: list[Any] = [GOLD] * len(names)
    if with_one:
        funcs.append(ONE["func"])
        results.append(ONE["result"])
        expecteds.append(ONE["expected"])
    return task({"func": funcs, "conj": conj, "result": results, "expected": expecteds})


def test_and_takes_the_mean_of_negative_and_fractional_scores(ctx: TaskContext) -> None:
    negative, fractional = ssim_of(ctx, "inverted.png"), ssim_of(ctx, "noisy.png")
    evaluation = evaluate(ctx, three("and", ("inverted.png", "noisy.png"), with_one=True), "DONE")
    # Neither is exactly 0, so "and" goes on; the mean counts the negative score as it is.
    assert evaluation.metric_scores == [negative, fractional, 1.0]
    assert evaluation.score == pytest.approx((negative + fractional + 1.0) / 3)


def test_or_takes_the_max_and_stops_only_at_an_exact_one(ctx: TaskContext) -> None:
    negative, fractional = ssim_of(ctx, "inverted.png"), ssim_of(ctx, "noisy.png")
    best = evaluate(ctx, three("or", ("inverted.png", "noisy.png")), "DONE")
    assert best.metric_scores == [negative, fractional] and best.score == fractional
    # Every score negative: the max is negative too (upstream returns max(results) untouched).
    worst = evaluate(ctx, three("or", ("inverted.png", "inverted.png")), "DONE")
    assert worst.score == negative < 0
    # The gold image against itself is exactly 1 (a float of SSIM's own): "or" stops there.
    stopped = evaluate(ctx, three("or", ("gold.png", "inverted.png")), "DONE")
    assert stopped.score == 1.0 and stopped.metric_scores == [1.0, None]


def test_differs_a_missing_result_against_a_blank_expected_document_scores_zero(
    ctx: TaskContext, tmp_path: Path
) -> None:
    """Differs: upstream's vm_file gives None for a missing file, and compare_pptx_files and
    compare_pdfs open None as a new blank document: against a blank expected deck or PDF, no file at
    all scores 1 there. The project scores a missing result 0 without calling the metric."""
    from pptx import Presentation

    blank_deck = tmp_path / "blank.pptx"
    Presentation().save(str(blank_deck))
    ctx.assets.put_bytes(BLANK_DECK_URL, blank_deck.read_bytes())
    ctx.assets.put_bytes(BLANK_PDF_URL, write_pdf(tmp_path / "blank.pdf", [[]]).read_bytes())
    for func, url, name in (
        ("compare_pptx_files", BLANK_DECK_URL, "deck.pptx"),
        ("compare_pdfs", BLANK_PDF_URL, "doc.pdf"),
    ):
        evaluation = evaluate(
            ctx,
            task(
                {
                    "func": func,
                    "result": {"type": "vm_file", "path": f"~/parity/never-saved-{name}", "dest": name},
                    "expected": {"type": "cloud_file", "path": url, "dest": f"blank-{name}"},
                }
            ),
            "DONE",
        )
        assert evaluation.score == 0.0 and "no result" in evaluation.message


def test_differs_a_score_that_is_not_a_finite_number_is_an_evaluator_error(
    ctx: TaskContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differs: upstream's evaluate returns NaN (or infinity) as it is; a result record cannot hold
    it (JSON has no NaN) nor can a mean or a success rate, so the project masks it as the
    evaluator's failure. No metric here answers one on any file tried."""
    from pytest_osworld.errors import EvaluatorError
    from pytest_osworld.evaluation.metrics import METRICS

    monkeypatch.setitem(METRICS, "parity_not_a_number", lambda result, expected=None, **_: float("nan"))
    with pytest.raises(EvaluatorError, match="not a finite number"):
        evaluate(ctx, task({"func": "parity_not_a_number", "result": {"type": "rule", "rules": {}}}), "DONE")
