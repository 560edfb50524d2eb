"""`timeline --format json` (render/timeline_json.py): a document of columns that
`pl.read_json` loads, for every sample trace and for hostile values."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest

from clirun import Cli, runner
from testpaths import SAMPLES
from tracebuilder import TraceBuilder

HUGE = 2**70


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return runner(tmp_path, monkeypatch, capsys)


def hostile(path: Path) -> Path:
    """120 plain requests (no error code, no event, no stderr in the first 100 rows), then ids
    `"1"`, 1, `"orphan-1"` and 2**70, nested params, an error response, stderr and an exit."""
    b = TraceBuilder()
    for _ in range(120):
        b.response(b.request("session/prompt", {"sessionId": "s", "prompt": []}), {})
    deep = {"a": [{"b": {"c": [1, "x", None, {"d": 1e300}]}}], "_meta": {"\u202e": "\x1b[2J"}}
    for n, rid in enumerate(["1", 1, "orphan-1", "HUGE"]):
        b.request("session/resume", {"sessionId": f"r{n}", "deep": deep}, id=rid)
        b.history(f"r{n}", 1)
        b.marker(f"r{n}")
        b.response(rid, {"nested": deep})
    b.error(b.request("session/prompt", {"sessionId": "r0", "prompt": [deep]}), -32602)
    b.text("stderr", "1")
    b.event("exit", code=0, signal=None)
    b.write(path)
    path.write_text(path.read_text().replace('"id":"HUGE"', f'"id":{HUGE}'))  # orjson: 64 bits
    return path


def loaded(cli: Cli, trace: Path, tmp_path: Path) -> pl.DataFrame:
    """The timeline's JSON as polars reads it (from a file, as a user would), a row a record."""
    result = cli("timeline", str(trace), "--format", "json")
    assert result.code == 0, result.err
    (tmp_path / "timeline.json").write_text(result.out)
    frame = pl.read_json(tmp_path / "timeline.json")
    assert frame.height == 1  # one row of columns
    return frame.explode(pl.all())


@pytest.mark.parametrize("trace", sorted(SAMPLES.glob("*.jsonl")), ids=lambda p: p.stem)
def test_every_sample_timeline_loads_in_polars(cli: Cli, tmp_path: Path, trace: Path) -> None:
    """pl.read_json loads the timeline of each sample trace, a row per record shown."""
    rows = loaded(cli, trace, tmp_path)
    lines = trace.read_bytes().count(b"\n")
    assert 0 < rows.height <= lines and rows["seq"].dtype == pl.Int64


def test_hostile_values_load_with_ids_apart(cli: Cli, tmp_path: Path) -> None:
    """Mixed-type ids, nested params, an error code and stderr after 100 rows: it loads, and
    the ids are their JSON text, `"1"` apart from 1, 2**70 exact."""
    rows = loaded(cli, hostile(tmp_path / "t.jsonl"), tmp_path)
    ids = set(rows["id"].drop_nulls())
    assert {'"1"', "1", '"orphan-1"', str(HUGE), "120"} <= ids
    assert rows["error_code"].drop_nulls().to_list() == [-32602]
    assert "1" in rows.filter(pl.col("src") == "stderr")["text"].to_list()
    doc = orjson.loads((tmp_path / "timeline.json").read_bytes())
    assert set(doc) == set(rows.columns) and len({len(v) for v in doc.values()}) == 1
