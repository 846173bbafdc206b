"""Which model an LLM judge call (or a simulated user's) goes to (the clients that send it: ``clients.py``).

One call's configuration is resolved as upstream's evaluation model client resolves it, with the
project's settings placed around the environment (first found wins):

1. the call's ``options`` (what a task passes);
2. a judge setting given on the command line (``--osworld-judge-url`` ...): the run's explicit choice;
3. ``OSWORLD_EVAL_MODEL_*`` (and ``OPENAI_BASE_URL`` for the openai providers);
4. a judge setting from the profile or the ini file;
5. the call's defaults (``default_provider``, ``default_model``, ``default_api_key_env``,
   ``default_max_tokens``), then upstream's (3 attempts, 2.0 s apart, image detail ``high``).

The API key is read from an environment variable only, and held as a :class:`Secret`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_osworld.errors import OsworldError
from pytest_osworld.models.base import ModelApi, Prices
from pytest_osworld.models.secrets import Secret
from pytest_osworld.v2.llm import fields as checks
from pytest_osworld.v2.llm.fields import PROVIDERS

if TYPE_CHECKING:
    from pytest_osworld.settings import Settings

ENV_PREFIX = "OSWORLD_EVAL_MODEL_"
ENV = {
    "provider": ENV_PREFIX + "PROVIDER",
    "model": ENV_PREFIX + "NAME",
    "api_key": ENV_PREFIX + "API_KEY",
    "api_key_env": ENV_PREFIX + "API_KEY_ENV",
    "base_url": ENV_PREFIX + "BASE_URL",
    "temperature": ENV_PREFIX + "TEMPERATURE",
    "max_tokens": ENV_PREFIX + "MAX_OUTPUT_TOKENS",
    "retry_attempts": ENV_PREFIX + "RETRY_ATTEMPTS",
    "retry_delay": ENV_PREFIX + "RETRY_DELAY",
    "image_detail": ENV_PREFIX + "IMAGE_DETAIL",
    "reasoning_effort": ENV_PREFIX + "REASONING_EFFORT",
}
OPENAI_BASE_URL = "OPENAI_BASE_URL"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"

DEFAULT_URLS: dict[ModelApi, str] = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
IMAGE_DETAILS = ("low", "high", "auto")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
RETRY_ATTEMPTS = 3
RETRY_DELAY = 2.0
IMAGE_DETAIL = "high"


class JudgeError(OsworldError):
    """An LLM judge call failed (past its retries, timed out, unreadable) or answered nothing.

    The task is masked ``judge_error``: its score would rest on an answer nobody gave.
    """

    reason = "judge_error"


class JudgeConfigError(JudgeError):
    """A judge call cannot be made as configured (unknown provider, bad value, key variable unset)."""


@dataclass(frozen=True)
class JudgeLayer:
    """The judge settings given in one place; None: not given there."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    key_env: str | None = None

    def any(self) -> bool:
        return any(v is not None for v in (self.provider, self.model, self.base_url, self.key_env))


CLI_PREFIX = "--osworld-"
# The layer's field -> the setting that fills it.
LAYER_SETTINGS = {
    "provider": "judge_provider",
    "model": "judge_model",
    "base_url": "judge_url",
    "key_env": "judge_key_env",
}


@dataclass(frozen=True)
class JudgeSettings:
    """The run's judge settings: those given on the command line (above the environment), those from a
    profile or the ini file (below it), and what only the settings say (timeout, prices)."""

    given: JudgeLayer = field(default_factory=JudgeLayer)
    configured: JudgeLayer = field(default_factory=JudgeLayer)
    timeout: float = 120.0
    prices: Prices = field(default_factory=Prices)

    @classmethod
    def from_settings(cls, settings: Settings, given_on_cli: Collection[str] = ()) -> JudgeSettings:
        """``given_on_cli``: the names of the settings given on the command line."""
        given: dict[str, Any] = {}
        configured: dict[str, Any] = {}
        for name, setting in LAYER_SETTINGS.items():
            value = settings.value(setting)
            if value is not None:
                (given if setting in given_on_cli else configured)[name] = value
        return cls(
            given=JudgeLayer(**given),
            configured=JudgeLayer(**configured),
            timeout=settings.judge.timeout,
            prices=Prices(settings.judge.prompt_price, settings.judge.completion_price),
        )


def is_configured(settings: JudgeSettings, environ: Mapping[str, str]) -> bool:
    """Whether a judge is named: a judge setting, or an ``OSWORLD_EVAL_MODEL_*`` variable naming the model,
    the provider, where it is or its key. ``OPENAI_API_KEY`` alone is not one (upstream would call OpenAI's
    gpt-4o with it): a run spends nothing on a model it was not pointed at."""
    names = [ENV[k] for k in ("provider", "model", "api_key", "api_key_env", "base_url")]
    return settings.given.any() or settings.configured.any() or any(environ.get(n, "").strip() for n in names)


@dataclass(frozen=True)
class JudgeConfig:
    """One call's resolved configuration. ``url`` is the endpoint without credentials; the key and the
    raw URL never show in a repr."""

    provider: str
    model: str
    url: str
    key_env: str | None  # the variable the key was read from (None: no key is sent)
    temperature: float | None
    max_tokens: int
    retry_attempts: int
    retry_delay: float
    image_detail: str
    reasoning_effort: str | None
    timeout: float
    prices: Prices
    base_url: str = field(repr=False)  # as given: it may carry credentials, sent as a header
    key: Secret | None = field(default=None, repr=False)

    @property
    def api(self) -> ModelApi:
        return PROVIDERS[self.provider]

    def sampling(self) -> dict[str, Any]:
        """The per-request parameters for :meth:`ModelClient.complete`."""
        values: dict[str, Any] = {"max_tokens": self.max_tokens}
        if self.temperature is not None:
            values["temperature"] = self.temperature
        if self.reasoning_effort is not None and self.api == "openai":
            values["reasoning_effort"] = self.reasoning_effort
        return values

    def describe(self) -> dict[str, Any]:
        """What a record keeps: never a key."""
        return {"provider": self.provider, "model": self.model, "url": self.url}


@dataclass(frozen=True)
class CallDefaults:
    """The call's own defaults, as upstream's ``generate_text`` takes them."""

    provider: str = "openai"
    model: str = "gpt-4o"
    api_key_env: str = OPENAI_KEY_ENV
    max_tokens: int = 512


_Candidate = tuple[Any, str]  # a value and where it came from


def _pick(*candidates: _Candidate) -> _Candidate | None:
    for value, source in candidates:
        if value is not None and value != "":
            return value, source
    return None


def _named(
    field_name: str, opts: Mapping[str, Any], settings: JudgeSettings, environ: Mapping[str, str], default: str
) -> _Candidate | None:
    """The provider or the model: options, the command line, the environment, the profile, the default."""
    setting = LAYER_SETTINGS[field_name]
    return _pick(
        (opts.get(field_name), f"options.{field_name}"),
        (getattr(settings.given, field_name), CLI_PREFIX + setting.replace("_", "-")),
        (environ.get(ENV[field_name]), ENV[field_name]),
        (getattr(settings.configured, field_name), setting),
        (default, f"the call's default_{field_name}"),
    )


def identity(
    options: Mapping[str, Any] | None, settings: JudgeSettings, environ: Mapping[str, str], defaults: CallDefaults
) -> tuple[str, str]:
    """The provider and model a call is meant for, unchecked: what a failed call's record names."""
    opts = options or {}
    provider = _named("provider", opts, settings, environ, defaults.provider)
    model = _named("model", opts, settings, environ, defaults.model)
    return str(provider[0]) if provider else "", str(model[0]) if model else ""


def resolve(
    options: Mapping[str, Any] | None,
    settings: JudgeSettings,
    environ: Mapping[str, str],
    defaults: CallDefaults,
    *,
    key: tuple[str, Secret] | None = None,
) -> JudgeConfig:
    """The configuration of one call (see the module's docstring for the order).

    ``key``: a key already read, above every other source, and the variable it came from (the
    simulated user's ``OSWORLD_USER_SIM_API_KEY``). Raises :class:`JudgeConfigError` naming the value.
    """
    opts = dict(options or {})
    if opts.get("api_key"):
        raise JudgeConfigError(
            "options.api_key: a key written in a task is not used; export it in an environment variable "
            "and give that variable's name as api_key_env"
        )
    provider_found = _named("provider", opts, settings, environ, defaults.provider)
    model = _named("model", opts, settings, environ, defaults.model)
    if provider_found is None or model is None:
        raise JudgeConfigError(
            f"no judge {'provider' if provider_found is None else 'model'} is named; "
            f"set --osworld-judge-{'provider' if provider_found is None else 'model'} or "
            + ENV["provider" if provider_found is None else "model"]
        )
    provider, api = checks.provider(
        provider_found[0],
        provider_found[1],
        error=JudgeConfigError,
        not_here="the judge provider {!r} is not supported here",
        unknown="unknown judge provider {!r}",
    )

    base_url, url_from = _pick(
        (opts.get("base_url"), "options.base_url"),
        (settings.given.base_url, "--osworld-judge-url"),
        (environ.get(ENV["base_url"]), ENV["base_url"]),
        (environ.get(OPENAI_BASE_URL) if api == "openai" else None, OPENAI_BASE_URL),
        (settings.configured.base_url, "judge_url"),
    ) or (DEFAULT_URLS[api], "the default")
    endpoint = checks.url(base_url, url_from, error=JudgeConfigError, what="the judge URL")

    key_env, secret = _key(opts, settings, environ, defaults, api, key)

    return JudgeConfig(
        provider=provider,
        model=str(model[0]),
        url=endpoint.base,
        key_env=key_env,
        temperature=_float(opts, environ, "temperature", None, minimum=0.0),
        max_tokens=_int(opts, environ, "max_tokens", defaults.max_tokens, aliases=("max_output_tokens",)),
        retry_attempts=_int(opts, environ, "retry_attempts", RETRY_ATTEMPTS),
        retry_delay=_float(opts, environ, "retry_delay", RETRY_DELAY, minimum=0.0) or 0.0,
        image_detail=_choice(opts, environ, "image_detail", IMAGE_DETAILS) or IMAGE_DETAIL,
        reasoning_effort=_choice(opts, environ, "reasoning_effort", REASONING_EFFORTS),
        timeout=settings.timeout,
        prices=settings.prices,
        base_url=str(base_url),
        key=secret,
    )


def _key(
    opts: Mapping[str, Any],
    settings: JudgeSettings,
    environ: Mapping[str, str],
    defaults: CallDefaults,
    api: ModelApi,
    key: tuple[str, Secret] | None,
) -> tuple[str | None, Secret | None]:
    """The key's variable and the key. A variable named anywhere must hold a key; the call's default
    variable may be unset (a local endpoint needs no key; one that does answers 401 naming it)."""
    if key is not None:
        return key
    named = _pick(
        (opts.get("api_key_env"), "options.api_key_env"),
        (settings.given.key_env, "--osworld-judge-key-env"),
    )
    literal = environ.get(ENV["api_key"], "").strip()
    if named is None and literal:
        return ENV["api_key"], Secret(literal)
    named = named or _pick(
        (environ.get(ENV["api_key_env"]), ENV["api_key_env"]),
        (settings.configured.key_env, "judge_key_env"),
    )
    if named is not None:
        source = named[1]
        name = checks.env_name(str(named[0]).strip(), source, error=JudgeConfigError)
        return name, checks.key(name, source, environ, error=JudgeConfigError, whose="the judge's")
    name = defaults.api_key_env
    if api == "anthropic" and name == OPENAI_KEY_ENV:
        name = ANTHROPIC_KEY_ENV  # upstream's generic default names OpenAI's variable
    if name:
        checks.env_name(name, "the call's default_api_key_env", error=JudgeConfigError)
    value = environ.get(name, "").strip() if name else ""
    return (name or None), (Secret(value) if value else None)


def _int(
    opts: Mapping[str, Any], environ: Mapping[str, str], name: str, default: int, *, aliases: tuple[str, ...] = ()
) -> int:
    found = _pick(*((opts.get(n), f"options.{n}") for n in (name, *aliases)), (environ.get(ENV[name]), ENV[name]))
    value, source = found or (default, f"the default {name}")
    return checks.whole(value, source, error=JudgeConfigError, minimum=1)


def _float(
    opts: Mapping[str, Any], environ: Mapping[str, str], name: str, default: float | None, *, minimum: float
) -> float | None:
    found = _pick((opts.get(name), f"options.{name}"), (environ.get(ENV[name]), ENV[name]))
    if found is None:
        return default
    return checks.number(*found, error=JudgeConfigError, minimum=minimum)


def _choice(opts: Mapping[str, Any], environ: Mapping[str, str], name: str, allowed: tuple[str, ...]) -> str | None:
    found = _pick((opts.get(name), f"options.{name}"), (environ.get(ENV[name]), ENV[name]))
    if found is None:
        return None
    return checks.choice(*found, allowed, error=JudgeConfigError)
