"""Model endpoint clients: a neutral message format, OpenAI-compatible and Anthropic clients over httpx."""

from pytest_osworld.models.base import (
    Completion,
    ModelClient,
    ModelConfigError,
    ModelError,
    Prices,
    Sampling,
)
from pytest_osworld.models.messages import Image, Message, Text
from pytest_osworld.models.retry import RetryPolicy

__all__ = [
    "Completion",
    "Image",
    "Message",
    "ModelClient",
    "ModelConfigError",
    "ModelError",
    "Prices",
    "RetryPolicy",
    "Sampling",
    "Text",
]
