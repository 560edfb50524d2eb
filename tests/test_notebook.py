"""The notebook runs from top to bottom against the sample traces, from the repository root or
from notebooks/, and its committed outputs (what GitHub shows) are what it produces now.

`UPDATE_NOTEBOOK=1 pytest tests/test_notebook.py` executes it and commits the fresh outputs.
"""

from __future__ import annotations

import base64
import copy
import os
import shutil
import struct
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from testpaths import ROOT
from tracebuilder import TraceBuilder

NOTEBOOK = ROOT / "notebooks" / "replays.ipynb"
MAX_PNG_BYTES = 120_000  # a committed chart stays small (64 dpi)
MAX_PNG_WIDTH = 900


def execute(nb: Any, cwd: Path) -> Any:
    """Run a notebook with the venv's kernel in `cwd`; no timing metadata, so outputs compare."""
    client = NotebookClient(
        nb,
        timeout=180,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return nb


def outputs(nb: Any) -> list[list[dict[str, Any]]]:
    return [cell.outputs for cell in nb.cells if cell.cell_type == "code"]


def mimetypes(cell_outputs: list[dict[str, Any]]) -> set[str]:
    return {kind for out in cell_outputs for kind in out.get("data", {})}


def shape(cell_outputs: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """What a cell shows, without the bytes of images: output types, mimetypes, text."""
    out = []
    for o in cell_outputs:
        data = o.get("data", {})
        texts = tuple(str(v) for k, v in sorted(data.items()) if k in ("text/html", "text/plain"))
        out.append((o["output_type"], *sorted(data), *texts, str(o.get("text", ""))))
    return out


def png_width(data: str) -> int:
    raw = base64.b64decode(data)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    return int(struct.unpack(">I", raw[16:20])[0])


@pytest.fixture(scope="module")
def fresh() -> Any:
    """The committed notebook executed now, in notebooks/ (rewritten with UPDATE_NOTEBOOK=1)."""
    nb = execute(nbformat.read(NOTEBOOK, as_version=4), NOTEBOOK.parent)
    if os.environ.get("UPDATE_NOTEBOOK"):
        nbformat.write(nb, NOTEBOOK)
    return nb


def test_committed_notebook_is_valid_with_small_chart_outputs() -> None:
    """The committed notebook is valid, every code cell has its outputs (GitHub shows them),
    none is an error, and each chart is a PNG of modest size and width."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    cells = outputs(nb)
    assert all(cells), "run UPDATE_NOTEBOOK=1 pytest tests/test_notebook.py"
    assert all(o["output_type"] != "error" for cell in cells for o in cell)
    pngs = [
        o["data"]["image/png"] for cell in cells for o in cell if "image/png" in o.get("data", {})
    ]
    assert len(pngs) == 4  # gap, slowest replay, a real agent's replay, latency
    for data in pngs:
        assert len(base64.b64decode(data)) < MAX_PNG_BYTES
        assert png_width(data) <= MAX_PNG_WIDTH


@pytest.mark.slow
def test_committed_outputs_are_what_the_notebook_produces_now(fresh: Any) -> None:
    """Executed in notebooks/, each cell shows what is committed: the same kinds of output,
    the same text and tables (chart images compared by kind only), and no error."""
    committed = outputs(nbformat.read(NOTEBOOK, as_version=4))
    now = outputs(fresh)
    assert all(o["output_type"] != "error" for cell in now for o in cell)
    assert [shape(c) for c in now] == [shape(c) for c in committed]
    assert "text/html" in mimetypes(now[1])  # the replays table
    assert "0 traces" not in now[0][0]["text"]


@pytest.mark.slow
def test_notebook_finds_the_samples_from_the_repository_root(fresh: Any) -> None:
    """Executed in the repository root, its first cells find sample_traces/ all the same."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    first = [c for c in nb.cells if c.cell_type == "code"][:2]
    nb.cells = copy.deepcopy(first)
    cells = outputs(execute(nb, ROOT))
    assert cells[0][0]["text"] == outputs(fresh)[0][0]["text"]
    assert shape(cells[1]) == shape(outputs(fresh)[1])


@pytest.mark.slow
def test_notebook_runs_on_any_or_no_traces(tmp_path: Path) -> None:
    """Beside an empty sample_traces/, or one with a single small trace, it still runs through
    and names what it found."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    copy_path = Path(shutil.copy(NOTEBOOK, notebooks / NOTEBOOK.name))
    samples = tmp_path / "sample_traces"
    samples.mkdir()
    cells = outputs(execute(nbformat.read(copy_path, as_version=4), notebooks))
    assert cells[0][0]["text"] == "0 traces, 0 replay rows\n"
    assert all(o["output_type"] != "error" for cell in cells for o in cell)
    b = TraceBuilder(agent="tiny-agent", version="0.0.1")
    rid = b.resume("tiny_session")
    b.history("tiny_session", 2)
    b.marker("tiny_session")
    b.state("tiny_session")
    b.response(rid, dt=120)
    b.write(samples / "tiny.jsonl")
    cells = outputs(execute(nbformat.read(copy_path, as_version=4), notebooks))
    assert cells[0][0]["text"] == "1 traces, 1 replay rows\n"
    assert "tiny_session" in cells[1][0]["data"]["text/html"]
    assert all(o["output_type"] != "error" for cell in cells for o in cell)
