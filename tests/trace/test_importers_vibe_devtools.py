"""The importers of mistral-vibe's ACP log and of acp-devtools' session export, written from
the formats' sources (vibe/acp/acp_logger.py in mistral-vibe 3.0.3; export.ts and types.ts in
acp-devtools): detection, sides, times, connections, the rotated set, what is kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import acp_trace
from acp_trace.errors import InputError
from acp_trace.trace import importers
from testpaths import DATA as _DATA

DATA = _DATA / "imports"


def convert(path: Path, fmt: str | None = None) -> dict[str, list[dict[str, Any]]]:
    out = importers.convert(path, path.read_bytes(), fmt)
    return {name: [json.loads(line) for line in lines] for name, lines in out}


def test_vibe_log_with_its_rotated_sibling_is_one_log_split_per_connection(
    tmp_path: Path,
) -> None:
    """messages.jsonl.1 (older) is read before messages.jsonl; each initialize the agent
    received starts a trace; `in` is the client, `out` the agent; times in microseconds."""
    for name in ("vibe-messages.jsonl", "vibe-messages.jsonl.1"):
        shutil.copy(DATA / name, tmp_path / name)
    traces = convert(tmp_path / "vibe-messages.jsonl")
    assert list(traces) == [
        f"{tmp_path}/vibe-messages.jsonl#1",
        f"{tmp_path}/vibe-messages.jsonl#2",
    ]
    first, second = traces.values()
    head = first[0]
    assert head["imported_from"] == "vibe" and head["timing"] == "source"
    assert head["started_at"] == "2026-12-01T10:00:00.123456Z"
    assert [(r["src"], r["t_ns"]) for r in first[1:]] == [
        ("client", 0),
        ("agent", 2_500_000),
        ("client", 10_000_000),
        ("agent", 11_000_000),
        ("agent", 12_000_000),
        ("agent", 900_000_000),
    ]
    assert first[5]["msg"]["params"]["update"]["content"]["text"] == "hello \u00e9"
    assert second[0]["started_at"] == "2026-12-01T10:01:00.123456Z"
    assert [(r["src"], r["t_ns"]) for r in second[1:]] == [("client", 0), ("agent", 1_500_000)]


def test_vibe_log_named_without_its_siblings_starts_where_it_starts(tmp_path: Path) -> None:
    """Near miss: the newest file alone holds the end of one connection and a whole second
    one; with no sibling beside it, only what it holds is converted."""
    shutil.copy(DATA / "vibe-messages.jsonl", tmp_path / "messages.jsonl")
    traces = convert(tmp_path / "messages.jsonl")
    assert [len(lines) - 1 for lines in traces.values()] == [2, 2]


def test_vibe_replay_is_analyzed(tmp_path: Path) -> None:
    """The converted log is a v1 load with its replay: one v1_loaded row."""
    for name in ("vibe-messages.jsonl", "vibe-messages.jsonl.1"):
        shutil.copy(DATA / name, tmp_path / name)
    a = acp_trace.analyze(tmp_path / "vibe-messages.jsonl")
    rows = a.replays.select("outcome", "history_updates").rows()
    assert rows == [("v1_loaded", 2)]


def test_devtools_export_is_one_trace_in_seq_order_with_ms_times() -> None:
    """Messages in seq order; editor-to-agent is the client; raw kept (a line that is not JSON
    as text); t_ns from startedAt in ms; the agent command and the exporting tool named."""
    ((_, lines),) = convert(DATA / "acp-devtools-export.json").items()
    head, records = lines[0], lines[1:]
    assert head["imported_from"] == "acp-devtools" and head["timing"] == "source"
    assert head["started_at"] == "2025-12-01T10:00:00.000000Z"
    assert head["command"] == ["npx", "@mistralai/vibe-acp"]
    assert head["exported_by"] == "acp-devtools 0.4.0"
    assert [(r["src"], r["t_ns"]) for r in records] == [
        ("client", 5_000_000),
        ("agent", 30_000_000),
        ("client", 40_000_000),
        ("agent", 41_000_000),
        ("agent", 42_000_000),
        ("agent", 1_500_000_000),
        ("tap", 2_000_000_000),  # endedAt: the proxy saw the agent exit
    ]
    assert records[-1]["event"] == "exit" and records[-1]["code"] is None
    assert records[3]["text"] == "[agent] not json"
    assert records[5]["msg"] == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("vibe-messages.jsonl", "vibe"), ("acp-devtools-export.json", "acp-devtools")],
)
def test_both_formats_are_detected(name: str, fmt: str) -> None:
    """Each format is recognized from its content."""
    path = DATA / name
    assert importers.detect(path, path.read_text()) == fmt


def test_a_devtools_export_of_another_version_is_not_taken(tmp_path: Path) -> None:
    """Near miss: version 2 is not the format read here; the file is not taken for it."""
    doc = json.loads((DATA / "acp-devtools-export.json").read_text())
    path = tmp_path / "export.json"
    path.write_text(json.dumps({**doc, "version": 2}, indent=4))
    with pytest.raises(InputError, match="expected an acp-trace v1 trace or an ACP capture"):
        convert(path)


def test_odd_devtools_fields_are_counted_not_fatal(tmp_path: Path) -> None:
    """A message that is not an object, an unknown direction (even an object), a time of
    1e30 ms: counted as unconverted or kept without a time, never a crash."""
    doc = json.loads((DATA / "acp-devtools-export.json").read_text())
    doc["messages"][0]["direction"] = {"x": 1}
    doc["messages"][1]["timestamp"] = 1e30
    doc["messages"].append("junk")
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    ((_, lines),) = convert(path).items()
    assert lines[0]["unconverted"] == 2
    assert any(r.get("msg", {}).get("id") == 1 and r["t_ns"] is None for r in lines[1:])


def test_a_real_vibe_log_converts_to_a_v1_load() -> None:
    """A log mistral-vibe 3.0.3 (`vibe-acp`, offline, private HOME) wrote for initialize,
    session/new and session/load: one trace of that agent, whose load replayed its history."""
    a = acp_trace.analyze(DATA / "vibe-3.0.3-session-load.jsonl")
    row = a.replays.row(0, named=True)
    assert (row["agent"], row["agent_version"], row["protocol"]) == (
        "@mistralai/mistral-vibe",
        "3.0.3",
        1,
    )
    assert row["method"] == "session/load" and row["outcome"] == "v1_loaded"
    assert (
        row["response_ms"] > 0
        and a.headers[str(DATA / "vibe-3.0.3-session-load.jsonl")]["timing"] == "source"
    )


@pytest.mark.parametrize("odd", [[], {}, ["in"], None, 1])
def test_a_vibe_line_whose_dir_is_no_text_is_no_log_line(tmp_path: Path, odd: Any) -> None:
    """A line whose `dir` is a list or an object (unhashable) is not a log line: the rest of
    the log converts, nothing crashes (hypothesis found `dir: []` raising TypeError)."""
    lines = (DATA / "vibe-messages.jsonl.1").read_text().splitlines()
    first = json.loads(lines[0])
    first["dir"] = odd
    path = tmp_path / "vibe-messages.jsonl"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    traces = convert(path, "vibe")
    assert traces and all(records for records in traces.values())
