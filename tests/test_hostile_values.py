"""Odd JSON values in any field of a trace, or of a capture an importer reads, never crash the
analysis: every table, every finding and every rendering is made (or the input is refused with
one InputError), whatever type or size the field holds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import acp_trace
from acp_trace.analysis.diff import diff
from acp_trace.analysis.summary import summarize
from acp_trace.errors import InputError
from acp_trace.jsonrpc import loads_exact
from acp_trace.render.dataset import dataset_tables
from acp_trace.render.export import tables, write_export
from acp_trace.render.otlp import otlp_document
from acp_trace.render.report import check_output, format_summary, format_timeline, frame
from acp_trace.render.report.bundle import markdown_report
from acp_trace.render.report.diff import format_diff
from acp_trace.render.report.tables import replays_table, table, to_text
from acp_trace.trace import importers
from acp_trace.trace.reader import skipped_inputs
from testpaths import DATA
from tracebuilder import TraceBuilder

INF = "@1e400@"  # written as the number 1e400, which the stdlib reads as inf
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.sampled_from(
        [
            *(10**30, 10**400, 1e308, -1e308, 2.0, -0.0, "", "2", "x\x1b[2J", [], {}, [1, "a"]),
            *("\ud83d", "cut \ud83d", "\udc00", INF, [INF, "\ud83d"]),
        ]
    ),
)
HEADER_KEYS = (
    "ambiguous", "error_code_unknown", "timing", "unconverted", "started_at", "pid",
    "command", "cwd", "connection", "dropped", "missing_frames",
)  # fmt: skip


def base_trace() -> list[Any]:
    """A v2 trace with a marked resume, a prompt turn, an error, stderr and tap events."""
    b = TraceBuilder()
    rid = b.resume("s")
    b.history("s", 2)
    b.marker("s")
    b.response(rid, {})
    pid = b.request(
        "session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}
    )
    b.update("s", "agent_message_chunk", content={"type": "text", "text": "yes"})
    b.response(pid, {"stopReason": "end_turn"})
    b.error(b.request("session/load", {"sessionId": "t", "cwd": "/", "mcpServers": []}), -32603)
    b.notify("$/cancel_request", {"requestId": b.request("x/slow", {})}, src="client")
    b.text("stderr", "phase: sdk-initialize")
    b.event("dropped", count=2, stream="agent")
    b.event("exit", code=0, signal=None)
    return [json.loads(line) for line in b.lines]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a JSON value (object keys and list indexes), the value's own first."""
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """`value` with the item at `path` set to `new` (a copy; a missing key is added)."""
    if not path:
        return new
    if isinstance(value, dict):
        return {**value, path[0]: replaced(value.get(path[0]), path[1:], new)}
    copy = list(value)
    copy[path[0]] = replaced(copy[path[0]], path[1:], new)
    return copy


def dumps_line(value: Any) -> str:
    """A JSON line as a JavaScript peer writes it: lone surrogates as escapes, and INF as 1e400."""
    return json.dumps(value).replace(f'"{INF}"', "1e400")


def every_output(path: Path, out: Path | None = None) -> None:
    """Make every table, the findings and every rendering of one input, as the CLI would;
    with `out`, also compare it with itself (diff) and write every export format there: each
    JSON file written is strict JSON."""
    try:
        a = acp_trace.analyze(path)
    except InputError:
        return  # the input is no trace any more: refused in one line, as it should be
    found = a.findings()
    _ = a.replays, a.turns, a.gap_phases, a.latency("method"), a.latency("agent"), a.untimed()
    format_summary(summarize(a.records), skipped_inputs(a.records))
    for fmt in ("text", "json", "junit"):
        check_output(a, found, fmt)
    format_timeline(a.timeline, a.facts.windows)
    to_text(replays_table(a.replays, None, wide=False, width=80, untimed=a.untimed()), 80)
    to_text(table(a.latency("method"), fold=("method", "agent", "trace"), width=80), 80)
    frame(a.replays, "json")
    frame(a.replays, "csv")
    tables(a)
    otlp_document(a)
    dataset_tables(a)
    markdown_report(a, "acp-trace report t.jsonl")
    if out is None:
        return
    compared = diff(a, a)
    for fmt in ("text", "json", "markdown"):
        format_diff(compared, fmt)
    out.mkdir(exist_ok=True)
    for fmt in ("perfetto", "otlp", "csv", "parquet"):
        for written in write_export(a, fmt, f"{out}/{fmt}/"):
            if written.suffix == ".json":
                loads_exact(written.read_bytes())  # no Infinity, no unpaired surrogate bytes


BASE = base_trace()
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(data=st.data(), new=ODD)
def test_any_field_of_a_trace_may_hold_any_value(
    tmp_path: Path, data: st.DataObject, new: Any
) -> None:
    """One field of a header, record or message (or a header field the importers write) set
    to an odd value: every output is still made."""
    index = data.draw(st.integers(min_value=0, max_value=len(BASE) - 1), label="record")
    record = BASE[index]
    choices = list(paths(record)) + ([(key,) for key in HEADER_KEYS] if index == 0 else [])
    path = data.draw(st.sampled_from(choices), label="path")
    lines = [*BASE[:index], replaced(record, path, new), *BASE[index + 1 :]]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(dumps_line(line) + "\n" for line in lines))
    every_output(trace, tmp_path / "out")


@pytest.mark.parametrize("new", [10**400, 1e308], ids=["10**400", "1e308"])
def test_every_field_of_a_trace_may_hold_a_huge_number(tmp_path: Path, new: Any) -> None:
    """Each field of the trace in turn set to a number no 64-bit integer (or no float) holds:
    every output is still made."""
    for index, record in enumerate(BASE):
        for path in paths(record):
            lines = [*BASE[:index], replaced(record, path, new), *BASE[index + 1 :]]
            trace = tmp_path / "t.jsonl"
            trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
            every_output(trace)


CAPTURES = sorted(
    p
    for p in (DATA / "imports").iterdir()
    if p.suffix not in (".json", ".md")
    and not p.name.endswith(".trace.jsonl")  # the tap's traces beside acp-devtools' captures
)


@SETTINGS
@given(data=st.data(), new=ODD)
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_any_field_of_a_capture_may_hold_any_value(
    tmp_path: Path, capture: Path, data: st.DataObject, new: Any
) -> None:
    """One field of one line of an importer's sample set to an odd value: the capture is
    converted (or refused with InputError) and every output of the result is made."""
    lines = capture.read_text().splitlines()
    parsed = [(i, value) for i, line in enumerate(lines) if (value := _json(line)) is not None]
    index, value = data.draw(st.sampled_from(parsed), label="line")
    choices = list(paths(value))
    if not choices:
        return
    path = data.draw(st.sampled_from(choices), label="path")
    separator = "\x1e" if lines[index].startswith("\x1e") else ""  # JSON text sequences
    lines[index] = separator + dumps_line(replaced(value, path, new))
    mutated = tmp_path / capture.name
    mutated.write_text("\n".join(lines) + "\n")
    try:
        converted = importers.convert(mutated, mutated.read_bytes())
    except InputError:
        return
    for _name, trace_lines in converted:
        for line in trace_lines:  # what `import` writes: strict JSON lines, UTF-8
            loads_exact(line)
    every_output(mutated, tmp_path / "out")


def _json(line: str) -> Any:
    """A line's JSON value (after a record separator), or None when it holds none."""
    try:
        return json.loads(line.lstrip("\x1e"))
    except ValueError:
        return None


# Where each command of the CLI meets hostile input (odd values, lone surrogates, escapes,
# signals, closed pipes). A new command cannot land without a line here naming its tests.
HOSTILE_COVERAGE = {
    "record": ["tests/record/test_reliability.py", "tests/redaction/test_redactor.py"],
    "mock": ["tests/mock/test_mock_hostile.py"],
    "watch": ["tests/watch/test_screen.py", "tests/watch/test_cli_watch.py"],
    "mcp": ["tests/mcpserver/test_server.py", "tests/mcpserver/test_promise.py"],
    "drive": ["tests/drive/test_drive_hostile.py"],
    "bridge": ["tests/remote/test_bridge.py"],
    "summary": ["tests/test_hostile_values.py", "tests/cli/test_hostile.py"],
    "replays": ["tests/test_hostile_values.py", "tests/cli/test_hostile.py"],
    "fidelity": ["tests/fidelity/test_fidelity.py", "tests/cli/test_hostile.py"],
    "check": ["tests/test_hostile_values.py", "tests/cli/test_hostile.py"],
    "timeline": ["tests/test_hostile_values.py", "tests/cli/test_hostile.py"],
    "latency": ["tests/test_hostile_values.py", "tests/cli/test_hostile.py"],
    "rules": [],  # reads no input
    "diff": ["tests/test_hostile_values.py"],
    "report": ["tests/test_hostile_values.py", "tests/render/test_report_bundle.py"],
    "plot": ["tests/render/test_plots.py"],
    "export": ["tests/test_hostile_values.py", "tests/cli/test_hostile.py"],
    "compact": ["tests/render/test_dataset_faults.py"],
    "import": ["tests/test_hostile_values.py"],
    "demo": [],  # reads no input: it records its own agent and client
    "demo-agent": ["tests/demo/test_agent.py"],
    "demo-client": ["tests/demo/test_client.py"],
}


def test_every_command_is_met_with_hostile_input() -> None:
    """Each command of the CLI is listed with the tests that give it hostile input, and those
    files exist: a command added without them fails here."""
    from acp_trace.cli.app import HELP_PANELS

    commands = {name for names in HELP_PANELS.values() for name in names}
    assert commands == set(HOSTILE_COVERAGE), "list the new command's hostile-input tests"
    root = Path(__file__).parent.parent
    assert [
        f for files in HOSTILE_COVERAGE.values() for f in files if not (root / f).exists()
    ] == []
