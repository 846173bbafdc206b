"""Removing secrets (API keys, tokens, passwords, URL credentials) from text before it is written anywhere."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_osworld.settings import Settings

REDACTED = "***"

# Secrets shorter than this are not replaced by value: replacing a 3-letter string everywhere
# would wreck messages and hide nothing.
MIN_SECRET_LENGTH = 4
# Environment values are taken as secrets only from variables named like one, and only when long
# enough to be one ("false", "1" are not).
MIN_ENV_SECRET_LENGTH = 8
# What a shell accepts as a variable's name (matched whole: `$` would also admit a trailing newline).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET_ENV_NAME = re.compile(r"(?i)(api[_-]?key|token|secret|passw(or)?d|credential)")
# The guest user's password of upstream's VM and of the project's desktop: public, and a common word.
_PUBLIC_PASSWORDS = frozenset({"password"})

# scheme://user:pass@host or scheme://token@host -> scheme://***@host
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s@?#]+)@")
_AUTH_HEADER = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{6,}")
_KEY_VALUE = re.compile(
    r"(?i)(?<![A-Za-z0-9_])"
    r"(api[_-]?key|x-api-key|access[_-]?token|refresh[_-]?token|auth[_-]?token|id[_-]?token|token|secret|"
    r"client[_-]?secret|password|passwd|pwd)"
    r"(\"?'?\s*[:=]\s*\"?'?)"
    r"([^\s\"'&,;)}\]]+)"
)
# Well-known credential shapes, redacted wherever they appear.
_KNOWN_SHAPES = re.compile(
    r"\b("
    r"sk-[A-Za-z0-9_-]{16,}"  # OpenAI / Anthropic style keys
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|ya29\.[0-9A-Za-z_-]{20,}"  # Google OAuth access token
    r")"
)
# Mapping keys whose values are secrets whatever they look like (whole key, any case).
_SECRET_KEY = re.compile(
    r"(?i)^(authorization|proxy-authorization|x-api-key|api[_-]?key|apikey|password|passwd|secret|"
    r"client[_-]?secret|access[_-]?token|refresh[_-]?token|id[_-]?token|auth[_-]?token|token|cookie|set-cookie)$"
)


# Secret values this process knows of (the plugin remembers them at configure), so that a writer which
# is handed no secrets (an Allure step, say) still leaves them out.
_KNOWN: set[str] = set()


def is_env_name(name: str) -> bool:
    """Whether ``name`` is an environment variable's name (settings name the variable, never the secret)."""
    return _ENV_NAME.fullmatch(name) is not None


def remember(secrets: Iterable[str]) -> None:
    _KNOWN.update(s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH)


def sanitize(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without the given (or remembered) secret values and without anything shaped like a credential."""
    if not text:
        return text
    values = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH} | _KNOWN
    for secret in sorted(values, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}", text)
    text = _KEY_VALUE.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}", text)
    text = _KNOWN_SHAPES.sub(REDACTED, text)
    return text


def scrub(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A JSON-like value with every string sanitized and the values of secret-named keys redacted."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return sanitize(value, secrets)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and _SECRET_KEY.match(key) and item not in (None, "", [], {}):
                out[key] = REDACTED
            else:
                out[key] = scrub(item, secrets)
        return out
    if isinstance(value, list | tuple):
        return [scrub(item, secrets) for item in value]
    return value


def collect_secrets(settings: Settings | None = None, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The secret values this process knows of: the model key, secret-named environment variables,
    and the guest password when it is not the public default."""
    env = os.environ if environ is None else environ
    found: set[str] = set()
    key_env = settings.model.key_env if settings is not None else None
    if key_env and env.get(key_env):
        found.add(env[key_env])
    for name, value in env.items():
        if _SECRET_ENV_NAME.search(name) and value and len(value) >= MIN_ENV_SECRET_LENGTH:
            found.add(value)
    password = settings.sandbox.client_password if settings is not None else None
    if isinstance(password, str) and password not in _PUBLIC_PASSWORDS and len(password) >= MIN_SECRET_LENGTH:
        found.add(password)
    return tuple(sorted(found))
