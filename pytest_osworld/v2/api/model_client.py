"""``generate_text`` / ``generate_chat`` for task files: the run's LLM judge, in the task's scope.

Every call is recorded in the task's :class:`~pytest_osworld.v2.llm.judge.JudgeScope`; a failed or empty
answer raises and masks the task ``judge_error`` even when the task swallows the exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_osworld.v2.api.state import RuntimeUnavailable, current
from pytest_osworld.v2.llm.judge import JudgeScope


def _scope(what: str) -> JudgeScope:
    runtime = current(what)
    if runtime.judge is None:
        problem = f"task {runtime.task_id}: {what}: no LLM judge is configured for this run"
        runtime.judge_problems.append(problem)
        raise RuntimeUnavailable(problem)
    return runtime.judge


def generate_text(
    prompt: str,
    image_paths: Any = None,
    options: Mapping[str, Any] | None = None,
    *,
    system: str | None = None,
    default_provider: str = "openai",
    default_model: str = "gpt-4o",
    default_api_key_env: str = "OPENAI_API_KEY",
    default_max_tokens: int = 512,
) -> str:
    return _scope("generate_text").generate_text(
        prompt,
        image_paths,
        options,
        system=system,
        default_provider=default_provider,
        default_model=default_model,
        default_api_key_env=default_api_key_env,
        default_max_tokens=default_max_tokens,
    )


def generate_chat(
    messages: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
    *,
    default_provider: str = "openai",
    default_model: str = "gpt-4o",
    default_api_key_env: str = "OPENAI_API_KEY",
    default_max_tokens: int = 512,
) -> str:
    return _scope("generate_chat").generate_chat(
        messages,
        options,
        default_provider=default_provider,
        default_model=default_model,
        default_api_key_env=default_api_key_env,
        default_max_tokens=default_max_tokens,
    )
