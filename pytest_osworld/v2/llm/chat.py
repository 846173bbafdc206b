"""What the judge sends, in the model clients' neutral messages: upstream's ``image_paths`` read as
images (their media type from their bytes), and OpenAI-style chat messages converted, a malformed one a
``ValueError`` naming where it is."""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_osworld.models.messages import Image, Message, Part, Text

ImagePaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


def image_paths_of(image_paths: ImagePaths) -> list[Path]:
    if image_paths is None:
        return []
    if isinstance(image_paths, str | os.PathLike):
        image_paths = [image_paths]
    return [Path(p) for p in image_paths if p]  # empty entries are dropped, as upstream drops them


_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"))


def read_image(path: Path) -> tuple[bytes, str]:
    if not path.is_file():
        raise FileNotFoundError(f"the image {path} given to the LLM judge does not exist")
    data = path.read_bytes()
    for signature, media_type in _SIGNATURES:
        if data.startswith(signature):
            return data, media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return data, "image/webp"
    guessed = mimetypes.guess_type(path.name)[0]
    return data, guessed if guessed and guessed.startswith("image/") else "image/png"


def chat_messages(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """OpenAI-style messages as the clients' neutral ones; a malformed one is a ``ValueError`` naming it."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ValueError(f"messages: expected a list of {{role, content}} mappings, got {type(messages).__name__}")
    converted = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise ValueError(f"{where}: expected a mapping with role and content, got {type(message).__name__}")
        role = message.get("role")
        if role not in ("system", "user", "assistant"):
            raise ValueError(f"{where}.role: expected system, user or assistant, got {role!r}")
        content = message.get("content")
        if isinstance(content, str):
            parts: tuple[Part, ...] = (Text(content),)
        elif isinstance(content, list):
            parts = tuple(_part(part, f"{where}.content[{i}]") for i, part in enumerate(content))
        else:
            raise ValueError(f"{where}.content: expected text or a list of parts, got {type(content).__name__}")
        converted.append(Message(role, parts))
    return converted


def _part(part: Any, where: str) -> Part:
    if isinstance(part, str):
        return Text(part)
    if not isinstance(part, Mapping):
        raise ValueError(f"{where}: expected a text or image_url part, got {type(part).__name__}")
    if part.get("type") == "text" and isinstance(part.get("text"), str):
        return Text(part["text"])
    if part.get("type") == "image_url":
        image_url = part.get("image_url")
        url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
        detail = image_url.get("detail") if isinstance(image_url, Mapping) else None
        return _data_url(url, where, detail if isinstance(detail, str) else None)
    raise ValueError(f"{where}: expected a text or image_url part, got type {part.get('type')!r}")


def _data_url(url: Any, where: str, detail: str | None) -> Image:
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise ValueError(f"{where}: an image must be a data: URL (data:image/png;base64,...), not a link")
    head, _, payload = url.partition(";base64,")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{where}: the image's data URL is not valid base64") from None
    return Image(data, head.removeprefix("data:") or "image/png", detail)


def with_detail(message: Message, detail: str) -> Message:
    parts = tuple(Image(p.data, p.media_type, p.detail or detail) if isinstance(p, Image) else p for p in message.parts)
    return Message(message.role, parts)
