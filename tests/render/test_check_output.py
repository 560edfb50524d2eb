"""Tests of `acp-trace check` output: sides, input problems, and text safe for XML and terminals."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import polars as pl
import pytest

import acp_trace
from acp_trace.render.report import check_output
from tracebuilder import TraceBuilder

HOSTILE = "s\x1b]0;pwned\x07\x00\x0b\u202e\ufffe]]><x a='1'>&amp;"


def _hostile_trace(path: Path) -> Path:
    """A trace whose session id holds control characters, a bidi override, U+FFFE, `]]>`
    and markup."""
    b = TraceBuilder()
    rid = b.request("session/new", {"cwd": "/", "mcpServers": []})
    b.marker(HOSTILE)
    b.response(rid, {"sessionId": HOSTILE})
    return b.write(path)


def _client_and_agent_faults(path: Path) -> Path:
    """The client reuses a pending id; the agent sends a marker on session/new."""
    b = TraceBuilder()
    b.request("a/b", id=5)
    b.request("a/c", id=5)
    rid = b.request("session/new", {"cwd": "/", "mcpServers": []})
    b.marker("s")
    b.response(rid, {"sessionId": "s"})
    return b.write(path)


def test_junit_is_valid_xml_whatever_the_trace_holds(tmp_path: Path) -> None:
    """JUnit output parses as XML 1.0 with control characters, lone surrogates, U+FFFE, `]]>`
    and markup in session ids and messages; what XML cannot hold is shown escaped."""
    a = acp_trace.analyze(_hostile_trace(tmp_path / "t.jsonl"))
    out = check_output(a, a.findings(), "junit")
    root = ET.fromstring(out.encode("utf-8"))
    failures = [f.get("message") or "" for f in root.iter("failure")]
    assert any("\\u001b]0;pwned\\u0007\\u0000" in m and "]]><x a='1'>&amp;" in m for m in failures)
    assert any("\\ufffe" in (f.text or "") for f in root.iter("failure"))


def test_lone_surrogates_never_reach_xml_or_a_terminal() -> None:
    """A lone surrogate (what JSON.stringify writes for a cut emoji) is shown as an escape in
    XML and in the text output, so neither fails to encode."""
    from acp_trace.render.escape import terminal
    from acp_trace.render.report.formats import _attr, _text

    for out in (_attr("a\ud83db"), _text("a\ud83db"), terminal("a\ud83db")):
        assert "\\ud83d" in out
        out.encode("utf-8")


def test_text_is_safe_for_a_terminal(tmp_path: Path) -> None:
    """The text output shows control characters, bidi overrides and lone surrogates escaped."""
    a = acp_trace.analyze(_hostile_trace(tmp_path / "t.jsonl"))
    out = check_output(a, a.findings(), "text")
    assert "\x1b" not in out and "\u202e" not in out and "\x00" not in out
    assert "\\x1b]0;pwned\\x07" in out and "\\u202e" in out


def test_text_groups_findings_by_side_agent_first(tmp_path: Path) -> None:
    """The text output lists the agent's faults, then the client's, each with its counts."""
    a = acp_trace.analyze(_client_and_agent_faults(tmp_path / "t.jsonl"))
    out = check_output(a, a.findings(schema=False), "text")
    agent = out.index("the agent's faults: 1 error, 2 warnings, 0 info")
    client = out.index("the client's faults: 0 errors, 1 warning, 0 info")
    assert agent < out.index("marker-unexpected") < client < out.index("duplicate-request-id")


@pytest.mark.parametrize("fmt", ["json", "junit"])
def test_every_format_says_who(tmp_path: Path, fmt: str) -> None:
    """JSON findings carry `side`; in JUnit the side is the testcase's classname."""
    a = acp_trace.analyze(_client_and_agent_faults(tmp_path / "t.jsonl"))
    out = check_output(a, a.findings(schema=False), fmt)
    if fmt == "json":
        sides = {(f["rule"], f["side"]) for f in json.loads(out)["findings"]}
    else:
        root = ET.fromstring(out)
        cases = root.iter("testcase")
        sides = {(c.get("name"), c.get("classname")) for c in cases if len(c)}
    assert sides >= {("marker-unexpected", "agent"), ("duplicate-request-id", "client")}


def _with_stray_files(folder: Path) -> Path:
    folder.mkdir()
    _client_and_agent_faults(folder / "t.jsonl")
    (folder / "agent.log").write_text("starting\n")
    (folder / "empty.jsonl").write_bytes(b"")
    return folder


def test_json_lists_the_input_problems_apart_from_the_traces(tmp_path: Path) -> None:
    """check --format json names each skipped input and why, and counts only real traces."""
    folder = _with_stray_files(tmp_path / "traces")
    a = acp_trace.analyze(folder)
    doc = json.loads(check_output(a, a.findings(), "json"))
    assert [Path(t["path"]).name for t in doc["traces"]] == ["t.jsonl"]
    problems = {Path(p["path"]).name: p["problem"] for p in doc["input_problems"]}
    assert set(problems) == {"agent.log", "empty.jsonl"} and all(problems.values())


def test_junit_lists_the_input_problems_as_skipped(tmp_path: Path) -> None:
    """check --format junit has a suite of skipped testcases, one per input not read."""
    folder = _with_stray_files(tmp_path / "traces")
    a = acp_trace.analyze(folder)
    root = ET.fromstring(check_output(a, a.findings(), "junit"))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    inputs = suites.pop("acp-trace inputs")
    assert [Path(n).name for n in suites] == ["t.jsonl"]
    names = sorted(Path(c.get("name") or "").name for c in inputs.iter("testcase"))
    assert names == ["agent.log", "empty.jsonl"]
    assert all(c.find("skipped") is not None for c in inputs.iter("testcase"))
    assert inputs.get("skipped") == "2"


def test_text_counts_the_skipped_inputs(tmp_path: Path) -> None:
    """The text summary line counts traces and skipped inputs apart."""
    a = acp_trace.analyze(_with_stray_files(tmp_path / "traces"))
    out = check_output(a, a.findings(schema=False), "text")
    assert out.splitlines()[-1] == "1 trace, 1 error, 3 warnings, 0 info, 2 inputs skipped"


def test_findings_table_has_a_side_for_every_row(tmp_path: Path) -> None:
    """Every finding's side is agent, client or both."""
    a = acp_trace.analyze(_hostile_trace(tmp_path / "t.jsonl"))
    sides = set(a.findings()["side"])
    assert sides and sides <= {"agent", "client", "both"}
    assert a.findings().schema["side"] == pl.String
