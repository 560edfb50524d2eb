"""Credentials in the strings of a parsed JSON value: found (`in_value`), or replaced in place
(`redact_value`, which lists the JSON paths it changed). Iterative: a value nested deeper than
the interpreter's stack is walked all the same. `child` and `spell` write the JSON paths the
recorder lists (`$.params.prompt[0].text`, `$["odd key"]`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from acp_trace.credentials import find, may_hold, redact_str

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


def suspects(value: Any) -> frozenset[str]:
    """The strings and keys of `value` that may hold a credential; the others hold none.

    They are read together, one per line, in one pass (a message of a replayed history has
    dozens of strings: one pass per string cost most of the recorder's time; issue 34), and
    the strings a finding overlaps are the suspects. A credential of one string is found in
    them together too, where the line break ends it as the string's end did: no rule's
    match reads across a line break but a private key block's, which is a finding itself."""
    texts = list(strings(value))
    encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
    joined = b"\n".join(encoded)
    if not may_hold(joined):
        return frozenset()
    found = find(joined)
    if not found:
        return frozenset()
    chosen: set[str] = set()
    index, end = 0, len(encoded[0]) if encoded else 0
    for finding in found:  # by start
        while end < finding.start and index + 1 < len(encoded):
            index += 1
            end += 1 + len(encoded[index])
        first, reach = index, end
        while reach < finding.end and first + 1 < len(encoded):
            first += 1
            reach += 1 + len(encoded[first])
        chosen.update(texts[index : first + 1])
    return frozenset(chosen)


Redactions = dict[str, str]  # a string or key of a value -> the same with its credentials replaced


def redactions(value: Any) -> Redactions:
    """The strings and keys of a parsed JSON value that hold a credential, each with its
    credentials replaced (`redact_value` takes it, so a message is read once)."""
    found = {}
    for text in suspects(value):
        new, kinds = redact_str(text)
        if kinds:
            found[text] = new
    return found


def in_value(value: Any) -> bool:
    """Whether any string or key of a parsed JSON value holds a credential."""
    return bool(redactions(value))


def redact_value(value: Any, where: str = "$", changes: Redactions | None = None) -> list[str]:
    """Replace the credentials in every string of `value` (in place); the paths changed. A
    key that holds one is renamed; ValueError when that makes two keys equal. A string at
    the top is not changed (it cannot be replaced in place): see `redact_str`. `changes` is
    `redactions(value)` (or of a value equal to it), when the caller has it."""
    paths: list[str] = []
    chosen = redactions(value) if changes is None else changes
    if not chosen:
        return paths
    stack: list[tuple[Any, Any]] = [(value, (None, where))]
    while stack:
        node, trail = stack.pop()
        if isinstance(node, dict):
            _keys(node, trail, paths, chosen)
            members: Iterator[tuple[Any, Any]] = iter(node.items())
        elif isinstance(node, list):
            members = enumerate(node)
        else:
            continue
        for step, item in list(members):
            if isinstance(item, str):
                if item in chosen:
                    node[step] = chosen[item]
                    paths.append(spell((trail, step)))
            elif isinstance(item, dict | list):
                stack.append((item, (trail, step)))
    return paths


def _keys(node: dict[str, Any], trail: Any, paths: list[str], chosen: Redactions) -> None:
    if not any(key in chosen for key in node):
        return
    items = list(node.items())
    node.clear()
    for key, item in items:
        new = chosen.get(key, key)
        if new in node:
            raise ValueError("a key that holds a credential equals another once redacted")
        node[new] = item
        if new != key:
            paths.append(spell((trail, new)))
