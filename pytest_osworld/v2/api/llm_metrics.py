"""YES/NO verdicts of the run's LLM judge, with upstream's metric names and arguments.

Unlike upstream, a judge that fails does not become a silent 0.0: the call is recorded as failed in
the task's judge scope, which masks the task ``judge_error`` (the 0.0 returned here never stands).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_osworld.v2.api.model_client import generate_text
from pytest_osworld.v2.api.state import RuntimeUnavailable
from pytest_osworld.v2.llm.settings import JudgeError

VERDICT_SYSTEM = "You grade a result. Answer YES or NO as the first word."
VERDICT_TOKENS = 10


def verdict(text: str) -> str:
    """YES when the first word is YES (letters only, any case), else NO."""
    words = text.split()
    first = "".join(c for c in words[0] if c.isalpha()).upper() if words else ""
    return "YES" if first == "YES" else "NO"


def _ask(prompt: str, images: Sequence[str], options: Mapping[str, Any] | None) -> float:
    opts = dict(options or {})
    opts.setdefault("max_tokens", VERDICT_TOKENS)
    try:
        answer = generate_text(prompt, image_paths=list(images) or None, options=opts, system=VERDICT_SYSTEM)
    except (JudgeError, RuntimeUnavailable):
        return 0.0  # recorded in the task's judge scope: the task is masked, this value never stands
    return 1.0 if verdict(answer) == "YES" else 0.0


def compare_images_with_llm(
    image1_path: str, image2_path: str, prompt: str = "", options: Mapping[str, Any] | None = None, **extra: Any
) -> float:
    if not (os.path.exists(image1_path) and os.path.exists(image2_path)):
        return 0.0
    text = prompt or "Do Image 1 and Image 2 meet the criteria of the task? Answer YES or NO."
    return _ask(text, [image1_path, image2_path], {**(options or {}), **extra})


def compare_image_edit_with_llm(
    candidate_image_path: str,
    reference_image_path: str,
    initial_image_path: str,
    prompt: str = "",
    options: Mapping[str, Any] | None = None,
    **extra: Any,
) -> float:
    opts = {**(options or {}), **extra}
    prompt = str(opts.pop("prompt", prompt))
    paths = [initial_image_path, reference_image_path, candidate_image_path]
    if not all(os.path.exists(p) for p in paths):
        return 0.0
    text = prompt or (
        "Image 1 is the original, Image 2 the intended edit, Image 3 the result to grade. "
        "Does Image 3 carry out the edit of Image 2? Answer YES or NO."
    )
    return _ask(text, paths, opts)


def compare_multiple_images_with_llm(
    image_pairs: Sequence[tuple[str, str]], prompt: str = "", options: Mapping[str, Any] | None = None
) -> float:
    return 1.0 if all(compare_images_with_llm(a, b, prompt, options) == 1.0 for a, b in image_pairs) else 0.0


def compare_answers_with_llm(question: str, answer_a: str, answer_b: str, prompt: str = "") -> float:
    if not (question and answer_a and answer_b):
        return 0.0
    text = f"Question:\n{question.strip()}\n\nAnswer A:\n{answer_a.strip()}\n\nAnswer B:\n{answer_b.strip()}\n\n" + (
        prompt or "Do both answers say the same thing for this question? Answer YES or NO."
    )
    return _ask(text, [], None)


_compare_answers_with_llm = compare_answers_with_llm


def compare_text_with_llm(result_text: str, prompt: str = "", options: Mapping[str, Any] | None = None) -> str:
    """``"YES"``, ``"NO"``, or ``"FAIL"`` (no text, or the judge failed: then the task is masked)."""
    if not result_text:
        return "FAIL"
    text = f"{prompt or 'Does this text meet the requirements? Answer YES or NO.'}\n\n{result_text}"
    opts = dict(options or {})
    opts.setdefault("max_tokens", VERDICT_TOKENS)
    try:
        answer = generate_text(text, options=opts, system=VERDICT_SYSTEM)
    except (JudgeError, RuntimeUnavailable):
        return "FAIL"
    return verdict(answer)
