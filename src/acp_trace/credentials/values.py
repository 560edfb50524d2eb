"""Credentials in the strings of a parsed JSON value: found (`in_value`), or replaced in place
(`redact_value`, which lists the JSON paths it changed). Iterative: a value nested deeper than
the interpreter's stack is walked all the same. `child` and `spell` write the JSON paths the
recorder lists (`$.params.prompt[0].text`, `$["odd key"]`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from acp_trace.credentials import may_hold, redact_str

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def child(where: str, key: str) -> str:
    """The path of member `key` of the value at `where`."""
    return where + (f".{key}" if _IDENTIFIER.match(key) else f"[{json.dumps(key)}]")


def spell(trail: Any) -> str:
    """The JSON path of a `(parent trail, key or index)` chain."""
    steps: list[Any] = []
    while trail[0] is not None:
        trail, step = trail
        steps.append(step)
    path: str = trail[1]
    for step in reversed(steps):
        path = f"{path}[{step}]" if isinstance(step, int) else child(path, step)
    return path


def strings(value: Any) -> Iterator[str]:
    """Every string and key in a JSON value."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            yield from node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def in_value(value: Any) -> bool:
    """Whether any string or key of a parsed JSON value holds a credential."""
    return any(
        may_hold(text.encode("utf-8", "surrogatepass")) and redact_str(text)[1]
        for text in strings(value)
    )


def redact_value(value: Any, where: str = "$") -> list[str]:
    """Replace the credentials in every string of `value` (in place); the paths changed. A
    key that holds one is renamed; ValueError when that makes two keys equal. A string at
    the top is not changed (it cannot be replaced in place): see `redact_str`."""
    paths: list[str] = []
    stack: list[tuple[Any, Any]] = [(value, (None, where))]
    while stack:
        node, trail = stack.pop()
        if isinstance(node, dict):
            _keys(node, trail, paths)
            members: Iterator[tuple[Any, Any]] = iter(node.items())
        elif isinstance(node, list):
            members = enumerate(node)
        else:
            continue
        for step, item in list(members):
            if isinstance(item, str):
                new, found = redact_str(item)
                if found:
                    node[step] = new
                    paths.append(spell((trail, step)))
            elif isinstance(item, dict | list):
                stack.append((item, (trail, step)))
    return paths


def _keys(node: dict[str, Any], trail: Any, paths: list[str]) -> None:
    renamed = {key: redact_str(key) for key in node}
    if not any(found for _new, found in renamed.values()):
        return
    items = list(node.items())
    node.clear()
    for key, item in items:
        new = renamed[key][0]
        if new in node:
            raise ValueError("a key that holds a credential equals another once redacted")
        node[new] = item
        if new != key:
            paths.append(spell((trail, new)))
