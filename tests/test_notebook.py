"""The notebook runs from top to bottom against the sample traces, so it cannot rot."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from tracebuilder import TraceBuilder

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "replays.ipynb"


def execute(path: Path) -> Any:
    """Run a notebook with the venv's kernel, its own directory as the working directory."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    return nb


def outputs(nb: Any) -> list[list[dict[str, Any]]]:
    return [cell.outputs for cell in nb.cells if cell.cell_type == "code"]


def mimetypes(cell_outputs: list[dict[str, Any]]) -> set[str]:
    return {kind for out in cell_outputs for kind in out.get("data", {})}


def test_notebook_is_committed_without_outputs() -> None:
    """The committed notebook is valid and has no outputs or execution counts."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.slow
def test_notebook_runs_on_the_sample_traces() -> None:
    """Executed in notebooks/, it reads ../sample_traces and shows the replays table, the gap
    chart and a replay timeline, without errors."""
    nb = execute(NOTEBOOK)
    cells = outputs(nb)
    assert all(out["output_type"] != "error" for cell in cells for out in cell)
    assert "text/html" in mimetypes(cells[1])  # the replays table
    pngs = [i for i, cell in enumerate(cells) if "image/png" in mimetypes(cell)]
    assert len(pngs) >= 2  # the gap chart and the slowest replay at least
    if any((ROOT / "sample_traces").glob("*.jsonl")):
        assert "0 traces" not in cells[0][0]["text"]


@pytest.mark.slow
def test_notebook_runs_on_any_or_no_traces(tmp_path: Path) -> None:
    """Beside an empty sample_traces/, or one with a single small trace, it still runs through
    and names what it found."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    copy = Path(shutil.copy(NOTEBOOK, notebooks / NOTEBOOK.name))
    samples = tmp_path / "sample_traces"
    samples.mkdir()
    nb = execute(copy)
    assert outputs(nb)[0][0]["text"] == "0 traces, 0 replay rows\n"
    b = TraceBuilder(agent="tiny-agent", version="0.0.1")
    rid = b.resume("tiny_session")
    b.history("tiny_session", 2)
    b.marker("tiny_session")
    b.state("tiny_session")
    b.response(rid, dt=120)
    b.write(samples / "tiny.jsonl")
    cells = outputs(execute(copy))
    assert cells[0][0]["text"] == "1 traces, 1 replay rows\n"
    assert "tiny_session" in cells[1][0]["data"]["text/html"]
    assert all(out["output_type"] != "error" for cell in cells for out in cell)
