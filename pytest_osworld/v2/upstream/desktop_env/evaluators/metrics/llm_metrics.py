"""``desktop_env.evaluators.metrics.llm_metrics`` as task files import it, re-exported from
:mod:`pytest_osworld.v2.api.llm_metrics`."""

from __future__ import annotations

from pytest_osworld.v2.api.llm_metrics import (
    VERDICT_SYSTEM,
    VERDICT_TOKENS,
    compare_answers_with_llm,
    compare_image_edit_with_llm,
    compare_images_with_llm,
    compare_multiple_images_with_llm,
    compare_text_with_llm,
    verdict,
)

__all__ = [
    "VERDICT_SYSTEM",
    "VERDICT_TOKENS",
    "compare_answers_with_llm",
    "compare_image_edit_with_llm",
    "compare_images_with_llm",
    "compare_multiple_images_with_llm",
    "compare_text_with_llm",
    "verdict",
]
