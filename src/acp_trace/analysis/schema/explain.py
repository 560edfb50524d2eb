"""From jsonschema-rs errors to what a person reads: where, what, the schema's own words, and
whether the schema tells receivers to tolerate it.

A union (`anyOf`/`oneOf`) that fails is explained by the one branch the value was meant for:
branches whose discriminator (`sessionUpdate`, `type`, ...) or type does not fit are set aside,
and the branch left with the fewest problems is explained in turn. A value that fits no branch
is explained by the alternatives the union offers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

LENIENT_MARKERS = (
    "x-deserialize-default-on-error",
    "x-deserialize-skip-invalid-items",
    "x-deserialize-default-on-null",
)
_UNIONS = ("anyOf", "oneOf")
_INDEXED = ("properties", "patternProperties", "$defs", "prefixItems", "allOf", "anyOf", "oneOf")
_SINGLE = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_VALUE = ("properties", "patternProperties", "prefixItems", "items", "additionalProperties")


@dataclass(frozen=True)
class Problem:
    """One place where a value breaks its type."""

    path: tuple[str | int, ...]  # inside the message part (params, result or error)
    keyword: str  # the failing keyword: required, type, const, ...
    text: str  # what is wrong, in a few words
    says: str  # the schema's description of the value (or of the missing property)
    lenient: str | None  # the schema marker that tells receivers to tolerate it
    unknown: tuple[str, ...] = ()  # for `required`: keys present that the type does not define
    missing: str | None = None  # for `required`: the property that is missing


def problems(doc: dict[str, Any], type_name: str, errors: list[Any]) -> list[Problem]:
    """The problems behind a validator's errors, the unions explained by their branch."""
    return [_problem(doc, type_name, e) for e in _leaves(errors)]


def _leaves(errors: list[Any]) -> list[Any]:
    out: list[Any] = []
    for error in errors:
        branches = _context(error)
        fitting = [b for b in branches if not _misses(b, list(error.instance_path))]
        if fitting:
            explained: list[list[Any]] = [_leaves(b) for b in fitting]
            best: list[Any] = min(explained, key=len)
            out.extend(best)
        else:
            out.append(error)
    return out


def _context(error: Any) -> list[list[Any]]:
    if error.kind.name not in _UNIONS:
        return []
    return [list(b) for b in error.kind.context or []]


def _misses(branch: list[Any], at: list[Any]) -> bool:
    """True when a union branch is not the one the value was meant for."""
    for e in branch:
        path, name = list(e.instance_path), e.kind.name
        if path == at and name in ("type", "const", "enum", "not"):
            return True
        if name in ("const", "enum") and len(path) == len(at) + 1 and path[:-1] == at:
            return True
    return False


def _problem(doc: dict[str, Any], type_name: str, error: Any) -> Problem:
    nodes = _walk(doc, type_name, list(error.evaluation_path))
    keyword = error.kind.name
    detail = error.kind.as_dict()
    unknown: tuple[str, ...] = ()
    missing = None
    if keyword == "required":
        prop = missing = str(detail.get("property"))
        defined = _defined(nodes, doc)
        text = f"`{prop}` is required"
        says = _first(defined.get(prop), doc) or _says(nodes, doc)
        if isinstance(error.instance, dict) and defined:
            unknown = tuple(k for k in error.instance if k not in defined and not k.startswith("_"))
    else:
        text = _text(error, keyword, detail)
        says = _says(nodes, doc)
    return Problem(
        path=tuple(error.instance_path),
        keyword=keyword,
        text=text,
        says=says,
        lenient=_lenient(nodes, error),
        unknown=unknown,
        missing=missing,
    )


def _walk(
    doc: dict[str, Any], type_name: str, steps: list[Any]
) -> list[tuple[dict[str, Any], bool]]:
    """The schema nodes the evaluation went through, each with `True` where a new value (a
    property, an item) starts; `$ref`s followed."""
    node: Any = doc["$defs"][type_name]
    out: list[tuple[dict[str, Any], bool]] = [(node, True)]
    i = 1 if steps[:1] == ["$ref"] else 0  # the validator's root refers to the type
    while i < len(steps) and isinstance(node, dict):
        step = steps[i]
        if step == "$ref":
            node = _resolve(doc, node.get("$ref"))
        elif step in _INDEXED and i + 1 < len(steps):
            container = node.get(step)
            i += 1
            key = steps[i]
            node = container[key] if isinstance(container, dict | list) else None
        elif step in _SINGLE:
            node = node.get(step)
        else:
            break  # the failing keyword itself
        if isinstance(node, dict):
            out.append((node, step in _VALUE))
        i += 1
    return out


def _defined(nodes: list[tuple[dict[str, Any], bool]], doc: dict[str, Any]) -> dict[str, Any]:
    """The properties the schema defines for the object being checked (from every node of its
    composition: the union branch, its allOf parts, the types they refer to)."""
    defined: dict[str, Any] = {}
    for node, starts_value in nodes:
        if starts_value:
            defined = {}
        for key, value in _properties(node, doc).items():
            defined.setdefault(key, value)
    return defined


def _properties(node: Any, doc: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    if not isinstance(node, dict) or depth > 8:
        return {}
    found = dict(node.get("properties") or {})
    parts = [node.get("$ref"), *(b for b in node.get("allOf") or [] if isinstance(b, dict))]
    for part in parts:
        target = _resolve(doc, part) if isinstance(part, str) else part
        for key, value in _properties(target, doc, depth + 1).items():
            found.setdefault(key, value)
    return found


def _resolve(doc: dict[str, Any], ref: Any) -> Any:
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return doc["$defs"].get(ref.removeprefix("#/$defs/"))
    return None


def _lenient(nodes: list[tuple[dict[str, Any], bool]], error: Any) -> str | None:
    """The marker that tells receivers to tolerate this error: the innermost node on its way
    that has one (an invalid item of a skip-invalid-items array is skipped before the array
    would be defaulted)."""
    for index in range(len(nodes) - 1, -1, -1):
        node = nodes[index][0]
        inside_items = index + 1 < len(nodes) and nodes[index + 1][0] is node.get("items")
        if node.get("x-deserialize-skip-invalid-items") is True and inside_items:
            return "x-deserialize-skip-invalid-items"
        if node.get("x-deserialize-default-on-error") is True:
            return "x-deserialize-default-on-error"
        if node.get("x-deserialize-default-on-null") is True and error.instance is None:
            return "x-deserialize-default-on-null"
    return None


def _says(nodes: list[tuple[dict[str, Any], bool]], doc: dict[str, Any]) -> str:
    """The description of the value that failed: its property's, else its type's."""
    said = ""
    for node, starts_value in nodes:
        if starts_value:
            said = ""
        if not said:
            said = _first(node, doc)
    return said


def _first(node: Any, doc: dict[str, Any]) -> str:
    """The first paragraph of a node's description (or of the type it refers to), short."""
    if not isinstance(node, dict):
        return ""
    text = node.get("description")
    if not isinstance(text, str):
        refs = [node.get("$ref")] + [
            b.get("$ref") for b in node.get("allOf", []) if isinstance(b, dict)
        ]
        target = next((_resolve(doc, r) for r in refs if r), None)
        text = target.get("description") if isinstance(target, dict) else None
    if not isinstance(text, str):
        return ""
    first = " ".join(text.split("\n\n")[0].split())
    return first if len(first) <= 200 else first[:197] + "..."


def _text(error: Any, keyword: str, detail: dict[str, Any]) -> str:
    got = json_type(error.instance)
    if keyword == "type":
        types = detail.get("types") or []
        return f"expected {' or '.join(map(str, types))}, got {got}"
    if keyword == "const":
        return f"expected {short(detail.get('expected_value'))}, got {short(error.instance)}"
    if keyword == "enum":
        options = ", ".join(short(o) for o in detail.get("options") or [])
        return f"expected one of {options}, got {short(error.instance)}"
    if keyword == "minItems":
        return f"expected at least {detail.get('limit')} item(s), got {len(error.instance)}"
    if keyword in _UNIONS:
        return f"{got} {short(error.instance)} matches none of {_alternatives(error)}"
    message = str(error.message)
    return message if len(message) <= 120 else message[:117] + "..."


def _alternatives(error: Any) -> str:
    """What a union accepts, from its branches' discriminators and types."""
    at = list(error.instance_path)
    seen: list[str] = []
    for branch in _context(error):
        for e in branch:
            path, name, detail = list(e.instance_path), e.kind.name, e.kind.as_dict()
            if name == "const":
                key = f"`{path[-1]}` " if len(path) == len(at) + 1 else ""
                label = f"{key}{short(detail.get('expected_value'))}"
            elif name == "type" and path == at:
                label = " or ".join(map(str, detail.get("types") or []))
            else:
                continue
            if label not in seen:
                seen.append(label)
    shown = ", ".join(seen[:8]) + (", ..." if len(seen) > 8 else "")
    return f"the alternatives ({shown})" if seen else "the alternatives"


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else "value"


def short(value: Any, limit: int = 40) -> str:
    """A JSON value in at most `limit` characters (huge integers and lone surrogates too)."""
    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def path_text(part: str, path: tuple[str | int, ...]) -> str:
    """`params.update.content[0]`: a JSON path inside a message."""
    out = part
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        elif step.isidentifier():
            out += f".{step}"
        else:
            out += f"[{short(step)}]"
    return out
