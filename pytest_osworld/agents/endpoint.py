"""The session's model client, built from the settings for the chosen runner (whose protocol it speaks).

Here and not in ``models``: which API the endpoint speaks is the runner's to say (``registry``), and
the models' clients sit below the agents."""

from __future__ import annotations

import os

import httpx

from pytest_osworld.agents.registry import runner_model_api
from pytest_osworld.models.anthropic_client import AnthropicClient
from pytest_osworld.models.base import ModelApi, ModelConfigError, Prices, Sampling
from pytest_osworld.models.openai_client import OpenAIClient
from pytest_osworld.models.retry import RetryPolicy
from pytest_osworld.models.secrets import Secret
from pytest_osworld.models.transport import HttpModelClient
from pytest_osworld.sanitize import is_env_name
from pytest_osworld.settings import Settings

CLIENTS: dict[str, type[HttpModelClient]] = {"openai": OpenAIClient, "anthropic": AnthropicClient}


def read_key(key_env: str | None) -> Secret | None:
    """The API key from the environment variable named ``key_env``; None when no variable is named."""
    if not key_env:
        return None
    if not is_env_name(key_env):
        # Most likely the key itself was given instead of a variable's name: never repeat it.
        raise ModelConfigError(
            "--osworld-model-key-env must be the NAME of an environment variable (e.g. OPENAI_API_KEY), "
            "not the key itself; export the key in a variable and give its name"
        )
    value = os.environ.get(key_env, "").strip()
    if not value:
        raise ModelConfigError(
            f"the environment variable {key_env} (from --osworld-model-key-env) is not set or empty; "
            "export the API key in it before the run"
        )
    return Secret(value)


def endpoint_api(settings: Settings) -> ModelApi:
    """The protocol of the session's endpoint: the chosen runner's own when it speaks one API only (a
    native runner: anthropic-computer speaks Anthropic's Messages API), else ``model_api``."""
    api = runner_model_api(settings.runner_name)
    return "anthropic" if api == "anthropic" else "openai" if api == "openai" else settings.model.api


def make_model_client(
    settings: Settings,
    *,
    retry: RetryPolicy | None = None,
    transport: httpx.BaseTransport | None = None,
) -> HttpModelClient | None:
    """The client of ``settings.model.url`` (None when no URL is set: runners without a model).

    Sampling defaults come from the run's settings; a task's overrides are passed per request
    (``Sampling.from_settings(settings.for_task(id)).as_overrides()``).
    """
    if not settings.model.url:
        return None
    client_class = CLIENTS[endpoint_api(settings)]
    return client_class(
        url=settings.model.url,
        model=settings.model.name,
        key=read_key(settings.model.key_env),
        key_env=settings.model.key_env,
        sampling=Sampling.from_settings(settings),
        prices=Prices(settings.model.prompt_price, settings.model.completion_price),
        timeout=settings.model.timeout,
        retry=retry or RetryPolicy(retries=settings.model.retries, base=settings.model.backoff),
        transport=transport,
    )
