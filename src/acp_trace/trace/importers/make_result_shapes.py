"""Generate result_shapes.json: the shape of every ACP method's result, from the SDK's schemas.

    python -m acp_trace.trace.importers.make_result_shapes SDK_DIR [OUT]

SDK_DIR is an installed `@agentclientprotocol/sdk` package (pinned at 2.4.0, installed by
tests/peers/install_peers.sh into peers/acp-sdk/node_modules/@agentclientprotocol/sdk). Each
schema type that names a method (`x-method`) and is a response (its name ends in `Response`)
gives that method's result; its shape is what `required` and `properties` say after `$ref`,
`allOf` (merged) and `anyOf`/`oneOf` (alternatives) are resolved; a required key counts as a
listed property. A shape that lists no properties (an open object, a passthrough result) fits
any object. The table is the union over
schema v1 and v2, stable and unstable. The bare JSON-RPC importer reads it (jsonrpc.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SCHEMAS = ("v1/schema.json", "v1/schema.unstable.json", "v2/schema.json", "v2/schema.unstable.json")
OUT = Path(__file__).with_name("result_shapes.json")
Shape = tuple[frozenset[str], frozenset[str] | None]  # (required, properties or None: open)


def _merge(a: Shape, b: Shape) -> Shape:
    """Both shapes at once: the required keys of both, the properties either lists (a required
    key counts as listed); open only when neither lists any."""
    required = a[0] | b[0]
    if a[1] is None and b[1] is None:
        return required, None
    return required, (a[1] or frozenset()) | (b[1] or frozenset()) | required


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type", "object")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def shapes(node: Any, defs: dict[str, Any], seen: frozenset[str] = frozenset()) -> list[Shape]:
    """The object shapes a schema node allows (an empty list: it allows no object)."""
    if not isinstance(node, dict):
        return [(frozenset(), None)]
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            return [(frozenset(), None)]
        return shapes(defs[name], defs, seen | {name})
    if not _is_object(node):
        return []
    props = node.get("properties")
    open_extra = node.get("additionalProperties") not in (None, False)
    base: Shape = (
        frozenset(node.get("required") or ()),
        None if props is None or open_extra else frozenset(props),
    )
    alts = [_merge(base, (frozenset(), frozenset()))] if base[1] is not None else [base]
    for sub in node.get("allOf") or ():
        alts = [_merge(a, b) for a in alts for b in shapes(sub, defs, seen)]
    branches = [*(node.get("anyOf") or ()), *(node.get("oneOf") or ())]
    if branches:
        found = [s for sub in branches for s in shapes(sub, defs, seen)]
        alts = [_merge(a, b) for a in alts for b in found]
    return alts


def table(sdk: Path) -> dict[str, Any]:
    """{"source": ..., "methods": {method: [{"required": [...], "properties": [...]|null}]}}."""
    methods: dict[str, set[Shape]] = {}
    for name in SCHEMAS:
        defs = json.loads((sdk / "schema" / name).read_text())["$defs"]
        for type_name, node in defs.items():
            method = node.get("x-method")
            if isinstance(method, str) and type_name.endswith("Response"):
                methods.setdefault(method, set()).update(shapes(node, defs))
    version = json.loads((sdk / "package.json").read_text())["version"]
    return {
        "source": f"@agentclientprotocol/sdk@{version}: "
        + ", ".join(f"schema/{n}" for n in SCHEMAS),
        "methods": {
            method: sorted(
                (
                    {"required": sorted(req), "properties": None if p is None else sorted(p)}
                    for req, p in found
                ),
                key=lambda s: json.dumps(s),
            )
            for method, found in sorted(methods.items())
        },
    }


def render(sdk: Path) -> str:
    """The file's text: one method per line, so that a diff shows what changed."""
    data = table(sdk)
    rows = ",\n".join(f"    {json.dumps(m)}: {json.dumps(s)}" for m, s in data["methods"].items())
    return f'{{\n  "source": {json.dumps(data["source"])},\n  "methods": {{\n{rows}\n  }}\n}}\n'


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out = Path(argv[1]) if len(argv) == 2 else OUT
    out.write_text(render(Path(argv[0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
