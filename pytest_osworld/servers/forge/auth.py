"""The forge's one credential, the run's token: ``PRIVATE-TOKEN: <token>`` or ``Authorization: Bearer
<token>`` on the REST API, HTTP basic auth (any user name, the token as password) for git."""

from __future__ import annotations

import base64
import hmac
from email.message import Message


def token_ok(token: str, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest((given or "").encode(), token.encode())


def api_token(headers: Message) -> str | None:
    """The token a REST call gives, if any."""
    if headers.get("PRIVATE-TOKEN"):
        return str(headers["PRIVATE-TOKEN"])
    auth = str(headers.get("Authorization", ""))
    return auth[7:].strip() if auth[:7].lower() == "bearer " else None


def basic_ok(token: str, headers: Message) -> bool:
    """Whether a git request gives the token as its basic auth password."""
    auth = str(headers.get("Authorization", ""))
    if auth[:6].lower() != "basic ":
        return False
    try:
        _, _, password = base64.b64decode(auth[6:].strip()).decode().partition(":")
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return False
    return token_ok(token, password)
