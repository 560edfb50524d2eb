"""The package layout is enforced: layers point one way, no import circles, typer only in cli/."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testpaths import ROOT

SRC = ROOT / "src"
PACKAGE = SRC / "acp_trace"

# What each part may import of acp_trace (besides itself, the light package root, `errors` and
# `jsonrpc`). The same table stands in DEVELOPERS.md.
MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(),
    "jsonrpc": set(),
    "files": set(),
    "owned": set(),
    "processes": set(),
    "quantities": set(),
    "credentials": set(),
    "trace": set(),
    "redaction": {"trace.format", "credentials"},
    "record": {"trace.format", "redaction"},
    "remote": {"trace.format", "redaction", "record.trace_file", "record.options"},
    "fidelity": set(),
    "weight": set(),
    "analysis": {"trace", "fidelity", "weight"},
    "render": {"trace", "analysis", "fidelity", "weight", "redaction"},
    "demo": set(),
    "demo.run": {"trace", "analysis", "render"},
    "mock": {"trace", "demo", "redaction", "credentials"},
    "fleet": {"trace", "analysis", "render", "weight"},
    "watch": {"trace", "analysis", "render", "weight"},
    "mcpserver": {"trace", "analysis", "render", "redaction", "weight"},
    "drive": {
        "trace",
        "analysis",
        "fidelity",
        "weight",
        "render",
        "demo",
        "mock",
        "record.trace_file",
        "record.options",
    },
    "pytest_plugin": {"trace", "analysis", "render", "demo", "drive"},
    "cli": {"*"},
    # The package root names the public API lazily (TYPE_CHECKING imports only; the test below
    # proves it loads nothing heavy) and __main__ runs the CLI.
    "": {"*"},
    "__main__": {"*"},
}
# credentials/ is no shared vocabulary: the tap and the outputs redact through redaction/.
SHARED = {"errors", "jsonrpc", "files", "owned", "processes", "quantities"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """Every acp_trace module a file imports (at any depth, lazy imports included)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("acp_trace"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("acp_trace"):
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                yield sub if sub in modules else node.module


def _part(module: str) -> str:
    """The row of MAY_IMPORT a module belongs to (`acp_trace.demo.run` -> `demo.run`)."""
    inner = module.removeprefix("acp_trace").removeprefix(".")
    for key in sorted(MAY_IMPORT, key=len, reverse=True):
        if inner == key or inner.startswith(key + "."):
            return key
    return inner


def _allowed(source: str, target: str) -> bool:
    inner = target.removeprefix("acp_trace").removeprefix(".")
    if not inner or _part(target) in SHARED or _part(source) == _part(target) != "":
        return True
    if _part(source) == "demo.run" and _part(target) == "demo":
        return True
    rules = MAY_IMPORT.get(_part(source), set())
    return "*" in rules or any(inner == r or inner.startswith(r + ".") for r in rules)


def test_every_module_belongs_to_a_part() -> None:
    """Each module of src/acp_trace sits in a part of the layer table (or is the root)."""
    for module in _modules():
        assert _part(module) in MAY_IMPORT, module


def test_layers_point_one_way() -> None:
    """No module imports a part its layer may not see (record knows nothing of analysis, ...)."""
    modules = _modules()
    broken = [
        f"{source} imports {target}"
        for source, path in modules.items()
        for target in _imports(path, modules)
        if not _allowed(source, target)
    ]
    assert broken == []


def test_no_import_circles() -> None:
    """The module import graph (lazy imports included) has no cycle."""
    modules = _modules()
    graph = {
        m: {t for t in _imports(p, modules) if t in modules and t != m} for m, p in modules.items()
    }
    # A package's __init__ re-exporting its own submodules is not a circle of the layout.
    for m in graph:
        graph[m] = {
            t for t in graph[m] if not (t.startswith(m + ".") and modules[m].name == "__init__.py")
        }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            assert visit(module) is None, " -> ".join(stack)


def test_only_cli_imports_typer() -> None:
    """typer (and click) appear in cli/ only."""
    offenders = []
    for module, path in _modules().items():
        if _part(module) == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{module}: {n}" for n in names if n.split(".")[0] in ("typer", "click")]
    assert offenders == []


@pytest.mark.parametrize(
    "statement",
    [
        "import acp_trace",
        "import acp_trace.record.tap",
        "import acp_trace.record.writer",
        "import acp_trace.redaction.redactor",
        "import acp_trace.trace.format",
    ],
)
def test_the_recorder_does_not_load_the_analyzer(statement: str) -> None:
    """Importing the package root, the recorder or its redaction loads neither polars nor
    matplotlib."""
    code = f"{statement}; import sys; print(sorted({{'polars', 'matplotlib', 'numpy'}} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_public_api_loads_lazily() -> None:
    """The README's names resolve from the package root."""
    import acp_trace

    assert callable(acp_trace.analyze) and callable(acp_trace.read_trace)
    assert callable(acp_trace.replays) and callable(acp_trace.check)
    assert callable(acp_trace.timeline) and callable(acp_trace.write_report)
    assert callable(acp_trace.plots.gap)
    with pytest.raises(AttributeError):
        acp_trace.no_such_name  # noqa: B018
