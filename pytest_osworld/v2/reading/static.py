"""Values in a Python syntax tree, computed without running it.

What resolves: literals (strings, numbers, booleans, None, lists, tuples, dicts), names bound earlier to
such values (module constants, earlier class attributes), ``+`` of two strings or two lists, f-strings
whose every part resolves, unary minus on a number, and ``.strip()`` (``lstrip``, ``rstrip``) or
``textwrap.dedent`` of a string. Everything else (imported names, other calls, attributes, subscripts)
is an :class:`Unresolved` that says why: a value is never guessed.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_STRIPS = frozenset({"strip", "lstrip", "rstrip"})
_DEDENT = frozenset({"textwrap.dedent", "dedent"})


@dataclass(frozen=True)
class Unresolved:
    """A value the syntax alone does not give; ``why`` names the construct."""

    why: str

    def __str__(self) -> str:
        return f"<unresolved: {self.why}>"


@dataclass(frozen=True)
class Imported:
    """A name bound by an import: ``qualname`` is ``module.name`` (or the module itself)."""

    qualname: str


@dataclass(frozen=True)
class ClassRef:
    """A name bound to a class defined in the module being read."""

    name: str


@dataclass(frozen=True)
class FunctionRef:
    """A name bound to a function defined in the module being read."""

    name: str


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a name or attribute chain, None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def evaluate(node: ast.expr, scope: Mapping[str, Any]) -> Any:
    """The value of ``node`` with names looked up in ``scope``, or an :class:`Unresolved`."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _name(node.id, scope)
    if isinstance(node, ast.List | ast.Tuple):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return Unresolved("a list with * unpacking")
        return [evaluate(e, scope) for e in node.elts]
    if isinstance(node, ast.Dict):
        return _dict(node, scope)
    if isinstance(node, ast.JoinedStr):
        return _fstring(node, scope)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _concatenation(node, scope)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = evaluate(node.operand, scope)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value
        return value if isinstance(value, Unresolved) else Unresolved("a negated non-number")
    if isinstance(node, ast.Call):
        return _call(node, scope)
    return Unresolved(f"{type(node).__name__.lower()} expression")


def _name(name: str, scope: Mapping[str, Any]) -> Any:
    if name not in scope:
        return Unresolved(f"name {name} (not bound before its use)")
    value = scope[name]
    if isinstance(value, Imported):
        return Unresolved(f"{name}, imported from {value.qualname.rpartition('.')[0] or value.qualname}")
    if isinstance(value, FunctionRef):
        return Unresolved(f"function {name}")
    return value


def _dict(node: ast.Dict, scope: Mapping[str, Any]) -> Any:
    out: dict[Any, Any] = {}
    for key_node, value_node in zip(node.keys, node.values):
        if key_node is None:
            return Unresolved("a dict with ** unpacking")
        key = evaluate(key_node, scope)
        if not isinstance(key, str | int | float | bool) and key is not None:
            return Unresolved("a dict with a computed key")
        out[key] = evaluate(value_node, scope)
    return out


def _fstring(node: ast.JoinedStr, scope: Mapping[str, Any]) -> Any:
    parts: list[str] = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
            continue
        if not isinstance(value, ast.FormattedValue) or value.conversion != -1 or value.format_spec is not None:
            return Unresolved("f-string with a conversion or format spec")
        inner = evaluate(value.value, scope)
        if isinstance(inner, Unresolved):
            return Unresolved(f"f-string over {inner.why}")
        if not isinstance(inner, str | int | float) or isinstance(inner, bool):
            return Unresolved(f"f-string over a {type(inner).__name__}")
        parts.append(format(inner, ""))
    return "".join(parts)


def _concatenation(node: ast.BinOp, scope: Mapping[str, Any]) -> Any:
    left, right = evaluate(node.left, scope), evaluate(node.right, scope)
    for side in (left, right):
        if isinstance(side, Unresolved):
            return Unresolved(f"concatenation with {side.why}")
    if isinstance(left, str) and isinstance(right, str):
        return left + right
    if isinstance(left, list) and isinstance(right, list):
        return left + right
    return Unresolved(f"concatenation of {type(left).__name__} and {type(right).__name__}")


def _call(node: ast.Call, scope: Mapping[str, Any]) -> Any:
    func = node.func
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        return Unresolved(f"call to {dotted(func) or 'an expression'}()")
    if isinstance(func, ast.Attribute) and func.attr in _STRIPS:
        target = evaluate(func.value, scope)
        args = [evaluate(a, scope) for a in node.args]
        if isinstance(target, Unresolved):
            return target
        if isinstance(target, str) and len(args) <= 1 and all(isinstance(a, str) for a in args):
            return str(getattr(target, func.attr)(*args))
    name = dotted(func)
    bound = scope.get(name.split(".")[0]) if name else None
    is_dedent = name in _DEDENT and isinstance(bound, Imported) and bound.qualname in ("textwrap", "textwrap.dedent")
    if is_dedent and len(node.args) == 1:
        text = evaluate(node.args[0], scope)
        if isinstance(text, str):
            return textwrap.dedent(text)
        if isinstance(text, Unresolved):
            return text
    return Unresolved(f"call to {name or 'an expression'}()")
