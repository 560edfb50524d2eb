"""The vendored ACP JSON Schemas (data/, from npm @agentclientprotocol/sdk): which type a message
must match, and the compiled validators (each schema compiled once per process, on first use).

A message is matched by its kind, its sender and its method (a response by its request's
method) to the type the schema annotates with that method and the side that handles it
(`x-method`, `x-side`): a request's params (`...Request`), a response's result (`...Response`),
a notification's params (`...Notification`); an error response's `error` to `Error`. Methods the
schema does not name for that direction (extensions `_...`, proxies, unknown ones) have no type.
Messages are checked against the `.unstable.json` schema of their protocol version: it holds
every stable method, type and variant plus the unstable ones, and no type there requires more
than its stable form (tests/analysis/test_schema.py checks that on the vendored files).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import jsonschema_rs

VERSIONS = (1, 2)
PARTS = {"request": "params", "notification": "params", "response": "result", "error": "error"}
_SUFFIX = {"request": "Request", "notification": "Notification", "response": "Response"}


def _data(name: str) -> bytes:
    return resources.files("acp_trace.analysis.schema").joinpath(f"data/{name}").read_bytes()


@cache
def source() -> dict[str, Any]:
    """What was vendored: package, version, license and the sha256 of every file."""
    value: dict[str, Any] = json.loads(_data("source.json"))
    return value


@dataclass
class Schema:
    """One vendored schema file: its definitions, the method index and the compiled validators."""

    version: int
    doc: dict[str, Any]
    types: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (method, side, kind)
    update_variants: frozenset[str] = frozenset()
    _validators: dict[str, Any] = field(default_factory=dict)

    @property
    def defs(self) -> dict[str, Any]:
        defs: dict[str, Any] = self.doc["$defs"]
        return defs

    def type_for(self, kind: str, sender: str, method: str | None) -> str | None:
        """The definition a message must match (see the module docstring), or None."""
        if kind == "error":
            return "Error"
        if not method or kind not in _SUFFIX or sender not in ("client", "agent"):
            return None
        # A response travels back to the side that sent the request: the responder handles it.
        handler = sender if kind == "response" else ("agent" if sender == "client" else "client")
        return self.types.get((method, handler, kind)) or self.types.get((method, "protocol", kind))

    def validator(self, type_name: str) -> Any:
        """The compiled validator of one definition, compiled on first use and kept (with what
        it refers to: a few MB, where compiling every definition at once takes ~100 MB)."""
        found = self._validators.get(type_name)
        if found is None:
            root = {"$schema": self.doc.get("$schema"), "$ref": f"#/$defs/{type_name}"}
            found = jsonschema_rs.validator_for(
                {**root, "$defs": self.defs}, validate_formats=False
            )
            self._validators[type_name] = found
        return found


def _index(defs: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    out = {}
    for name, node in defs.items():
        method, side = node.get("x-method"), node.get("x-side")
        if not isinstance(method, str) or side not in ("client", "agent", "protocol"):
            continue
        for kind, suffix in _SUFFIX.items():
            if name.endswith(suffix):
                out[(method, side, kind)] = name
    return out


def _variants(defs: dict[str, Any]) -> frozenset[str]:
    """The `sessionUpdate` values the schema's SessionUpdate union names."""
    union = defs.get("SessionUpdate", {})
    branches = union.get("anyOf") or union.get("oneOf") or []
    names = set()
    for branch in branches:
        tag = (
            branch.get("properties", {}).get("sessionUpdate", {})
            if isinstance(branch, dict)
            else {}
        )
        if isinstance(tag.get("const"), str):
            names.add(tag["const"])
    return frozenset(names)


@cache
def schema(version: int, variant: str = "unstable") -> Schema:
    """The vendored schema of a protocol version (`unstable` or `stable`), loaded once."""
    name = f"v{version}/schema.json" if variant == "stable" else f"v{version}/schema.unstable.json"
    doc = json.loads(_data(name))
    defs = doc["$defs"]
    return Schema(version, doc, _index(defs), _variants(defs))


@cache
def literals() -> frozenset[str]:
    """Every string the schemas compare a value with (`const`, `enum`), in any version."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "const" and isinstance(value, str):
                    found.add(value)
                elif key == "enum" and isinstance(value, list):
                    found.update(v for v in value if isinstance(v, str))
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for version in VERSIONS:
        walk(schema(version).doc)
    return frozenset(found)
