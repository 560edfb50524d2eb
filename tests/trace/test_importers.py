"""Tests of the importers: detection, direction inference, each format's conversion, the CLI."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_trace.errors import InputError, UsageError
from acp_trace.trace import importers
from acp_trace.trace.reader import headers, read_trace
from testpaths import DATA as _DATA

DATA = _DATA / "imports"


def _convert(path: Path, fmt: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Convert a sample; {trace name: parsed lines (header first)}."""
    out = importers.convert(path, path.read_bytes(), fmt)
    return {name: [json.loads(line) for line in lines] for name, lines in out}


def _bare(tmp_path: Path, messages: list[Any]) -> list[dict[str, Any]]:
    """Convert bare JSON-RPC lines; the parsed lines of the one trace (header first)."""
    path = tmp_path / "capture.ndjson"
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))
    (lines,) = _convert(path).values()
    return lines


def _rows(records: pl.DataFrame, trace: str) -> list[tuple[Any, ...]]:
    """(kind, src, method, id) of a trace's rows after its header."""
    cols = ("kind", "src", "method", "id")
    mine = records.filter(pl.col("trace") == trace, pl.col("kind") != "header")
    return [tuple(r) for r in mine.select(cols).rows()]


# ---------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("bare.ndjson", "jsonrpc"),
        ("bare-array.json", "jsonrpc"),
        ("zed-acp-log.json", "zed"),
        ("conductor.jsons", "conductor"),
        ("conductor-direct.jsons", "conductor"),
        ("inspector.jsonl", "inspector"),
        ("conductor-v10.jsons", "conductor"),
        ("conductor-v11.jsons", "conductor"),
        ("conductor-v11-proxy.jsons", "conductor"),
        ("thinkwell.jsonl", "thinkwell"),
        ("thinkwell-v1.jsonl", "thinkwell"),
        ("acpx-exec.jsonl", "acpx"),
        ("acpx-resume.jsonl", "acpx"),
    ],
)
def test_detects_each_sample(name: str, fmt: str) -> None:
    """Each sample's format is recognized from its content alone."""
    path = DATA / name
    assert importers.detect(path, path.read_text()) == fmt


@pytest.mark.parametrize(
    ("content", "found"),
    [
        ("", "an empty file"),
        ("   \n\n", "an empty file"),
        ("hello world\n", "text that is not JSON"),
        ('{"foo": 1, "bar": 2}\n', "a JSON object with keys foo, bar"),
        ("[1, 2, 3]\n", "a JSON array of 3 elements"),
        ("42\n", "a JSON int"),
    ],
)
def test_unknown_content_says_what_was_expected_and_found(
    tmp_path: Path, content: str, found: str
) -> None:
    """Content of no known format raises InputError naming the file, what was expected and found."""
    path = tmp_path / "mystery.json"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        importers.convert(path, path.read_bytes())
    message = str(err.value)
    assert message.startswith(f"{path}: expected an acp-trace v1 trace or an ACP capture")
    assert found in message


def test_detection_skips_a_damaged_first_line(tmp_path: Path) -> None:
    """A damaged first line does not hide the format of the lines after it."""
    path = tmp_path / "cut.jsons"
    path.write_text("garbage\n" + (DATA / "conductor-direct.jsons").read_text())
    assert importers.detect(path, path.read_text()) == "conductor"


def test_v1_records_without_header_are_read_as_a_trace(tmp_path: Path) -> None:
    """A file of v1 records whose header is missing (written by hand) is read as a v1 trace."""
    path = tmp_path / "headless.jsonl"
    path.write_text(
        '{"seq":1,"t_ns":0,"src":"client","msg":{"jsonrpc":"2.0","id":1,"method":"a"}}\n'
    )
    records = read_trace(path)
    assert records["kind"].to_list() == ["request"] and records["t_ns"].to_list() == [0]


def test_unknown_format_name_is_a_usage_error() -> None:
    """`--from` with a name that is no format is a usage error listing the known ones."""
    with pytest.raises(UsageError, match="known formats are acp-trace, jsonrpc, zed"):
        importers.convert(DATA / "bare.ndjson", b"", "pcap")


def test_forced_format_that_converts_nothing_is_refused() -> None:
    """`--from zed` on a capture that is not Zed's log raises instead of an empty trace."""
    with pytest.raises(InputError, match="expected Zed's ACP log"):
        read_trace(DATA / "bare-array.json", fmt="zed")


@pytest.mark.parametrize(
    ("content", "fmt", "found"),
    [
        ("", "conductor", "no message on a leg it keeps"),
        (
            '{"type":"request","ts":1,"from":"proxy:0","to":"proxy:1","id":1,"method":"x"}\n',
            "conductor",
            "no message on a leg it keeps",
        ),
        ("[]", "jsonrpc", "no message"),
        ('{"foo": 1}\n', "thinkwell", "line 1: not a thinkwell conductor trace line"),
        ('{"action":"session_ensured","acpxRecordId":"s"}\n', "acpx", "no message"),
    ],
)
def test_forced_format_that_converts_nothing_fails_on_one_line(
    tmp_path: Path, content: str, fmt: str, found: str
) -> None:
    """`--from F` on input F converts nothing from is refused in one line, even with no problem."""
    path = tmp_path / "capture.txt"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        importers.convert(path, path.read_bytes(), fmt)
    assert "found nothing to convert" in str(err.value) and found in str(err.value)
    assert "\n" not in str(err.value)


def test_detected_format_that_converts_nothing_is_no_silent_success(tmp_path: Path) -> None:
    """A conductor trace whose events are all between proxies is refused, not read as 0 records."""
    path = tmp_path / "inner.jsons"
    path.write_text(
        '{"type":"request","ts":1,"protocol":"acp","from":"Proxy(0)","to":"Proxy(1)","id":"u",'
        '"method":"session/new","params":{}}\n'
    )
    with pytest.raises(InputError, match="found nothing to convert"):
        read_trace(path)
    done = _cli(path, "-o", tmp_path / "out.jsonl")
    assert done.returncode == 2 and done.stderr.count("\n") == 1


def test_forced_format_converts_like_detection() -> None:
    """Naming the right format gives the same traces as detecting it."""
    path = DATA / "inspector.jsonl"
    assert _convert(path, "inspector") == _convert(path)


def test_forced_acp_trace_passes_a_native_trace_through(tmp_path: Path) -> None:
    """`--from acp-trace` keeps a native trace's lines as they are."""
    path = tmp_path / "native.jsonl"
    data = b'{"acp_trace":1,"kind":"header"}\n{"seq":1,"t_ns":5,"src":"client","text":"x"}\n'
    path.write_bytes(data)
    assert importers.convert(path, data, "acp-trace") == [(str(path), data.splitlines(True))]


# ---------------------------------------------------------------- bare JSON-RPC direction


def _req(method: str, rid: Any, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}


def _note(method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params or {}}


def _res(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {}}


CLIENT_ONLY = [
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/resume",
    "session/prompt",
    "session/fork",
    "session/set_mode",
    "session/set_config_option",
    "session/list",
    "session/close",
]
AGENT_ONLY = [
    "session/request_permission",
    "elicitation/create",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/wait_for_exit",
]

DIRECTION_CASES: list[tuple[str, list[Any], list[str], list[str | None]]] = [
    *[(f"{m} is the client's", [_req(m, 1)], ["client"], [None]) for m in CLIENT_ONLY],
    *[(f"{m} is the agent's", [_req(m, 1)], ["agent"], [None]) for m in AGENT_ONLY],
    ("session/update is the agent's", [_note("session/update")], ["agent"], [None]),
    ("session/cancel is the client's", [_note("session/cancel")], ["client"], [None]),
    (
        "a response comes from the side opposite its request",
        [_req("session/new", 1), _res(1), _req("fs/read_text_file", 1), _res(1)],
        ["client", "agent", "agent", "client"],
        [None, None, None, None],
    ),
    (
        "an error response pairs like a result",
        [_req("session/load", "a"), {"jsonrpc": "2.0", "id": "a", "error": {"code": -32002}}],
        ["client", "agent"],
        [None, None],
    ),
    (
        "ids keep their type: 1 and '1' differ",
        [_req("fs/read_text_file", "1"), _req("session/prompt", 1), _res(1)],
        ["agent", "client", "agent"],
        [None, None, None],
    ),
    (
        "an id pending on both sides answers the older request, then the other",
        [_req("session/prompt", 7), _req("session/request_permission", 7), _res(7), _res(7)],
        ["client", "agent", "agent", "client"],
        [None, None, "pending on both sides", None],
    ),
    (
        "a response matching no pending request is taken as the agent's",
        [_res(5)],
        ["agent"],
        ["matches no pending request"],
    ),
    (
        "$/cancel_request comes from the side whose request it names",
        [
            _req("session/prompt", 3),
            _note("$/cancel_request", {"requestId": 3}),
            _req("elicitation/create", 9),
            _note("$/cancel_request", {"requestId": 9}),
        ],
        ["client", "client", "agent", "agent"],
        [None, None, None, None],
    ),
    (
        "$/cancel_request naming no pending request is taken as the client's",
        [_note("$/cancel_request", {"requestId": 4})],
        ["client"],
        ["pending on neither side"],
    ),
    (
        "an unknown request is taken as the client's",
        [_req("_vendor/do_it", 1)],
        ["client"],
        ["unknown method '_vendor/do_it'"],
    ),
    (
        "an unknown notification is taken as the agent's",
        [_note("_vendor/status")],
        ["agent"],
        ["unknown method '_vendor/status'"],
    ),
    (
        "mcp/message is sent by both sides",
        [_req("mcp/message", 1)],
        ["client"],
        ["mcp/message is sent by both sides"],
    ),
    (
        "a batch line takes the side of its messages",
        [[_req("session/prompt", 1), _note("session/cancel")], [_note("session/update")]],
        ["client", "agent"],
        [None, None],
    ),
    (
        "a batch mixing both sides is ambiguous",
        [[_req("session/prompt", 1), _note("session/update")], _note("session/cancel")],
        ["client", "client"],
        ["mixes messages of both sides", None],
    ),
]


@pytest.mark.parametrize(
    ("messages", "senders", "reasons"),
    [case[1:] for case in DIRECTION_CASES],
    ids=[case[0] for case in DIRECTION_CASES],
)
def test_direction_inference(
    tmp_path: Path, messages: list[Any], senders: list[str], reasons: list[str | None]
) -> None:
    """Each bare message gets the sender the protocol implies; undecided ones are recorded."""
    head, *records = _bare(tmp_path, messages)
    assert [r["src"] for r in records] == senders
    noted = {a["seq"]: a for a in head["ambiguous"]}
    for record, reason, line in zip(records, reasons, range(1, len(records) + 1), strict=True):
        if reason is None:
            assert record["seq"] not in noted
        else:
            assert reason in noted[record["seq"]]["reason"]
            assert noted[record["seq"]]["line"] == line


def test_bare_sample_header_and_unconverted_line() -> None:
    """The bare sample is ordering-only, counts its non-JSON line and leaves an error event."""
    (lines,) = _convert(DATA / "bare.ndjson").values()
    head = lines[0]
    assert head["imported_from"] == "jsonrpc"
    assert head["timing"] == "ordering-only"
    assert head["source"] == str(DATA / "bare.ndjson")
    assert head["unconverted"] == 1
    assert [a["line"] for a in head["ambiguous"]] == [10, 13]
    (event,) = [r for r in lines[1:] if r["src"] == "tap"]
    assert event == {"seq": 8, "t_ns": None, "src": "tap", "event": "error",
                     "message": "not JSON", "source_line": 9}  # fmt: skip


def test_bare_lines_are_kept_verbatim() -> None:
    """A message line is recorded byte for byte (spacing and key order kept)."""
    path = DATA / "bare.ndjson"
    (lines,) = [lines for _, lines in importers.convert(path, path.read_bytes())]
    first = path.read_bytes().split(b"\n", 1)[0]
    assert lines[1] == b'{"seq":1,"t_ns":null,"src":"client","msg":' + first + b"}\n"


def test_pretty_printed_messages_one_after_another(tmp_path: Path) -> None:
    """Pretty-printed messages written one after another (jq's output) are read with their lines."""
    path = tmp_path / "jq.json"
    path.write_text(
        json.dumps(_req("initialize", 0), indent=2) + "\n" + json.dumps(_res(0), indent=2)
    )
    (lines,) = _convert(path).values()
    assert [(r["src"], r["msg"].get("method")) for r in lines[1:]] == [
        ("client", "initialize"),
        ("agent", None),
    ]


def test_damaged_array_keeps_what_came_before(tmp_path: Path) -> None:
    """A JSON array cut in the middle keeps its whole elements and counts the rest once."""
    path = tmp_path / "cut.json"
    whole = json.dumps([_req("initialize", 0), _res(0), _req("session/new", 1)], indent=2)
    path.write_text(whole[: whole.rindex("session/new")])
    (lines,) = _convert(path).values()
    assert [r["src"] for r in lines[1:]] == ["client", "agent", "tap"]
    assert lines[0]["unconverted"] == 1
    assert lines[-1]["source_line"] > 1


# ---------------------------------------------------------------- Zed


def test_zed_directions_stderr_and_error_response() -> None:
    """Zed's outgoing is the client, incoming the agent, stderr a text line; errors stay errors."""
    (lines,) = _convert(DATA / "zed-acp-log.json").values()
    head, *records = lines
    assert head["imported_from"] == "zed" and head["timing"] == "ordering-only"
    assert [r["src"] for r in records] == [
        "client", "stderr", "agent", "client", "agent", "agent", "client", "tap", "agent",
    ]  # fmt: skip
    assert records[1]["text"] == "agent starting"
    assert records[-1]["msg"] == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32002, "message": "Resource not found"},
    }
    assert records[7]["message"] == "unknown _direction 'sideways'"
    assert records[7]["source_line"] == 83
    assert head["unconverted"] == 1


def test_zed_entry_type_inferred_when_missing(tmp_path: Path) -> None:
    """Without a usable `_type` an entry is a response when it answers a pending request."""
    entries = [
        {"_direction": "outgoing", "_type": "asdf", "id": 0, "method": "initialize", "params": {}},
        {"_direction": "incoming", "_type": "asdf", "id": 0, "method": "initialize", "params": {}},
        {"_direction": "incoming", "_type": "asdf", "id": None, "method": "session/update",
         "params": {"sessionId": "s"}},
    ]  # fmt: skip
    path = tmp_path / "zed.json"
    path.write_text(json.dumps(entries, indent=2))
    records = read_trace(path)
    assert _rows(records, str(path)) == [
        ("request", "client", "initialize", "0"),
        ("response", "agent", None, "0"),
        ("notification", "agent", "session/update", None),
    ]


# ---------------------------------------------------------------- conductor


def test_conductor_keeps_the_client_and_agent_legs() -> None:
    """A chain with proxies gives `#client` and `#agent` traces with each leg's own ids."""
    traces = _convert(DATA / "conductor.jsons")
    assert list(traces) == [
        f"{DATA / 'conductor.jsons'}#client",
        f"{DATA / 'conductor.jsons'}#agent",
    ]
    client, agent = traces.values()
    assert client[0]["leg"] == ["client", "proxy:0"]
    assert agent[0]["leg"] == ["proxy:1", "agent"]
    assert client[0]["chain"] == ["client", "proxy:0", "proxy:1", "agent"]
    assert [r["msg"].get("id") for r in client[1:] if "msg" in r] == [0, 0, 1, 1, 2, None, 2]
    assert [r["msg"].get("id") for r in agent[1:]][:2] == ["9a0e", "9a0e"]


def test_conductor_counts_what_it_leaves_out() -> None:
    """Proxy-to-proxy events and MCP-over-ACP traffic are counted, and the cut line too."""
    client, agent = _convert(DATA / "conductor.jsons").values()
    assert client[0]["skipped"] == {"other_legs": 4}
    assert agent[0]["skipped"] == {"mcp": 2, "other_legs": 4}
    assert client[0]["unconverted"] == 1 and agent[0]["unconverted"] == 0
    assert client[-1]["source_line"] == 21


def test_conductor_times_share_one_clock() -> None:
    """t_ns counts from the file's first event, so the two legs can be compared."""
    client, agent = _convert(DATA / "conductor.jsons").values()
    assert client[1]["t_ns"] == 0
    assert agent[1]["t_ns"] == round((0.0042 - 0.0012) * 1e9)
    assert client[0]["timing"] == "source"


def test_conductor_without_proxies_is_one_trace() -> None:
    """Without proxies the client and agent legs are the same connection: one trace."""
    traces = _convert(DATA / "conductor-direct.jsons")
    assert list(traces) == [str(DATA / "conductor-direct.jsons")]
    (lines,) = traces.values()
    assert [(r["src"], r["t_ns"]) for r in lines[1:]] == [
        ("client", 0),
        ("agent", 250_000_000),
        ("client", 500_000_000),
    ]


# ---------------------------------------------------------------- inspector


def test_inspector_connections_become_traces() -> None:
    """Each connection of an export is its own trace, named `<file>#<connection>`."""
    traces = _convert(DATA / "inspector.jsonl")
    path = DATA / "inspector.jsonl"
    assert list(traces) == [f"{path}#1", f"{path}#2"]
    one, two = traces.values()
    assert (one[0]["connection"], two[0]["connection"]) == (1, 2)
    assert one[0]["dropped"] == two[0]["dropped"] == 3
    assert one[0]["started_at"] == "2026-07-29T08:00:00.456000Z"
    assert one[3] == {
        "seq": 3,
        "t_ns": 144_000_000,
        "src": "agent",
        "text": 'Traceback (most recent call last): "unquoted \\ mess',
    }
    assert one[4]["message"] == "not JSON" and one[4]["source_line"] == 6
    assert two[-1]["message"] == "unknown direction 'sideways'"


def test_inspector_frames_without_time_and_missing_frames(tmp_path: Path) -> None:
    """Frames without `at` keep t_ns null; frames the header counts but the file lacks are noted."""
    head = {"type": "header", "format": "acp-inspector-trace", "version": 1, "frames": 3}
    frame = {"connection": "ws-1", "direction": "client -> agent", "encoding": "utf8",
             "frame": json.dumps(_req("initialize", 1))}  # fmt: skip
    odd = {**frame, "encoding": "base64"}
    path = tmp_path / "bridge.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in (head, frame, odd)))
    (lines,) = _convert(path).values()
    assert lines[0]["timing"] == "ordering-only" and lines[0]["missing_frames"] == 1
    assert lines[1]["t_ns"] is None and lines[1]["src"] == "client"
    assert lines[2]["message"] == "unsupported encoding 'base64'"


def test_inspector_connection_with_a_lone_surrogate(tmp_path: Path) -> None:
    """A connection named with half an emoji (`"\\ud83d"`, no UTF-8) names its trace with the
    escape, and the capture is read (hypothesis found it crashing the reader)."""
    head = {"type": "header", "format": "acp-inspector-trace", "version": 1}
    frames = [
        {"connection": c, "direction": "client -> agent", "encoding": "utf8",
         "frame": json.dumps(_req("initialize", 1))}
        for c in ("ws-1", "ws-\ud83d")
    ]  # fmt: skip
    path = tmp_path / "bridge.jsonl"
    # json.dumps writes the lone surrogate as its escape, as a JavaScript exporter would
    path.write_text("".join(json.dumps(v) + "\n" for v in (head, *frames)))
    records = read_trace(path)
    assert f"{path}#ws-\\ud83d" in records["trace"].to_list()


def test_inspector_other_version_is_refused(tmp_path: Path) -> None:
    """An export of another schema version is refused rather than read wrongly."""
    path = tmp_path / "v2.jsonl"
    path.write_text('{"type":"header","format":"acp-inspector-trace","version":2}\n')
    with pytest.raises(InputError, match="expected acp-inspector-trace version 1, found version 2"):
        importers.convert(path, path.read_bytes())


# ---------------------------------------------------------------- read_trace on the samples

EXPECTED_ROWS = {
    "bare-array.json": [
        ("request", "client", "initialize", "0"),
        ("response", "agent", None, "0"),
        ("request", "client", "session/load", "1"),
        ("notification", "agent", "session/update", None),
        ("response", "agent", None, "1"),
    ],
    "zed-acp-log.json": [
        ("request", "client", "initialize", "0"),
        ("text", "stderr", None, None),
        ("response", "agent", None, "0"),
        ("request", "client", "session/load", "1"),
        ("notification", "agent", "session/update", None),
        ("request", "agent", "fs/read_text_file", "0"),
        ("response", "client", None, "0"),
        ("event", "tap", None, None),
        ("error", "agent", None, "1"),
    ],
    "conductor.jsons#agent": [
        ("request", "client", "initialize", '"9a0e"'),
        ("response", "agent", None, '"9a0e"'),
        ("request", "client", "session/new", '"41bc"'),
        ("response", "agent", None, '"41bc"'),
        ("request", "client", "session/prompt", '"c3d4"'),
        ("notification", "agent", "session/update", None),
        ("error", "agent", None, '"c3d4"'),
    ],
    "inspector.jsonl#2": [
        ("request", "client", "initialize", "1"),
        ("response", "agent", None, "1"),
        ("request", "client", "session/new", "2"),
        ("event", "tap", None, None),
    ],
}


@pytest.mark.parametrize("trace", list(EXPECTED_ROWS))
def test_read_trace_rows(trace: str) -> None:
    """read_trace on a capture gives the rows of its messages with the inferred senders."""
    records = read_trace(DATA / trace.partition("#")[0])
    assert _rows(records, str(DATA / trace)) == EXPECTED_ROWS[trace]


@pytest.mark.parametrize(
    ("name", "timed"),
    [
        ("bare.ndjson", False),
        ("bare-array.json", False),
        ("zed-acp-log.json", False),
        ("conductor.jsons", True),
        ("inspector.jsonl", True),
    ],
)
def test_read_trace_timing(name: str, timed: bool) -> None:
    """Captures without timestamps keep t_ns null; with them every message row has one."""
    records = read_trace(DATA / name)
    messages = records.filter(
        pl.col("kind").is_in(["request", "response", "error", "notification", "text"])
    )
    assert messages.height > 0
    assert messages["t_ns"].null_count() == (0 if timed else messages.height)
    expected = "source" if timed else "ordering-only"
    assert {h["timing"] for h in headers(records).values()} == {expected}


def test_read_trace_bare_batch_has_one_row_per_message() -> None:
    """A batch line of a bare capture gives a row per message, all from one sender."""
    records = read_trace(DATA / "bare.ndjson")
    batch = records.filter(pl.col("line") == 14)
    assert batch.select("part", "src", "method").rows() == [
        (0, "client", "session/prompt"),
        (1, "client", "session/cancel"),
    ]


def test_directory_reading_includes_conductor_traces() -> None:
    """A directory of captures is read whole, conductor `.jsons` files included."""
    traces = set(read_trace(DATA)["trace"].unique())
    assert f"{DATA / 'conductor.jsons'}#client" in traces


def test_importers_do_not_print(capsys: pytest.CaptureFixture[str]) -> None:
    """Converting every sample writes nothing to stdout or stderr."""
    for path in sorted(DATA.iterdir()):
        if path.suffix != ".md":  # a README that says how captures were made
            importers.convert(path, path.read_bytes())
    assert capsys.readouterr() == ("", "")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=40) | st.sampled_from(['{"jsonrpc":"2.0","id":1}', "[", "{"])))
def test_never_crashes_on_bad_input(chunks: list[str]) -> None:
    """Arbitrary content is converted or refused with InputError, never anything else."""
    data = "\n".join(chunks).encode("utf-8", "surrogatepass")
    for fmt in (None, *importers.CONVERTERS):
        with contextlib.suppress(InputError):
            importers.convert(Path("fuzz.txt"), data, fmt)


# ---------------------------------------------------------------- acp-trace import


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_trace", "import", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_import_one_trace_to_a_file(tmp_path: Path) -> None:
    """`import SRC -o FILE` writes one v1 trace, 0600, that reads back like the capture."""
    out = tmp_path / "zed.jsonl"
    done = _cli(DATA / "zed-acp-log.json", "-o", out)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert "8 records, ordering-only, 1 unconverted" in done.stdout
    converted = read_trace(out)
    assert _rows(converted, str(out)) == EXPECTED_ROWS["zed-acp-log.json"]


def test_cli_import_several_traces_into_a_directory(tmp_path: Path) -> None:
    """Several traces go to one file each in the directory -o names."""
    out = tmp_path / "out"
    done = _cli(DATA / "inspector.jsonl", DATA / "conductor.jsons", "-o", f"{out}/")
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "conductor-agent.jsonl",
        "conductor-client.jsonl",
        "inspector-1.jsonl",
        "inspector-2.jsonl",
    ]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in out.iterdir())
    assert stat.S_IMODE(out.stat().st_mode) == 0o700


def test_cli_import_several_traces_to_a_file_is_refused(tmp_path: Path) -> None:
    """Several traces and a file for -o is a usage error that says to name a directory."""
    done = _cli(DATA / "inspector.jsonl", "-o", tmp_path / "one.jsonl")
    assert done.returncode == 2
    assert "give 2 traces" in done.stderr and "name a directory" in done.stderr
    assert not (tmp_path / "one.jsonl").exists()


def test_cli_import_never_overwrites_its_source(tmp_path: Path) -> None:
    """-o naming the source itself is refused and the source is left as it was."""
    src = tmp_path / "bare.ndjson"
    src.write_bytes((DATA / "bare.ndjson").read_bytes())
    done = _cli(src, "-o", src)
    assert done.returncode == 2 and "the output would destroy it" in done.stderr
    assert src.read_bytes() == (DATA / "bare.ndjson").read_bytes()


def test_cli_import_with_from(tmp_path: Path) -> None:
    """--from names the format; a wrong one is refused with exit code 2."""
    out = tmp_path / "x.jsonl"
    assert _cli(DATA / "bare-array.json", "--from", "jsonrpc", "-o", out).returncode == 0
    done = _cli(DATA / "bare-array.json", "--from", "inspector", "-o", tmp_path / "y.jsonl")
    assert done.returncode == 2 and "expected an ACP Inspector export" in done.stderr
    assert os.path.exists(out)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir() if p.suffix != ".md"))
def test_converted_traces_follow_the_schema(name: str) -> None:
    """Every line an importer writes is valid against the shipped trace-format JSON Schema."""
    from importlib.resources import files

    import jsonschema

    schema = json.loads(files("acp_trace.trace").joinpath("trace-format.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for lines in _convert(DATA / name).values():
        for line in lines:
            errors = list(validator.iter_errors(line))
            assert not errors, f"{line}: {errors[0].message}"


# ---------------------------------------------------------------- conductor generations


def test_conductor_captures_are_what_trace_rs_writes() -> None:
    """The committed conductor captures are the generator's bytes (trace.rs field order)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "captures", Path(__file__).with_name("conductor_captures.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, lines in module.captures().items():
        assert (DATA / name).read_text() == "".join(line + "\n" for line in lines)


@pytest.mark.parametrize(
    ("name", "generation", "chain"),
    [
        ("conductor.jsons", "lowercase", ["client", "proxy:0", "proxy:1", "agent"]),
        ("conductor-v10.jsons", "lowercase", ["client", "agent"]),
        ("conductor-v11.jsons", "debug-names", ["Client", "Agent"]),
        ("conductor-v11-proxy.jsons", "debug-names", ["Client", "Proxy(0)", "Proxy(1)"]),
    ],
)
def test_conductor_generation_and_chain(name: str, generation: str, chain: list[str]) -> None:
    """Each generation's names are read; with proxies the new one's agent is `Proxy(N)`."""
    heads = [lines[0] for lines in _convert(DATA / name).values()]
    assert {h["generation"] for h in heads} == {generation}
    assert heads[0]["chain"] == chain


def test_conductor_debug_names_without_proxies_is_one_paired_trace() -> None:
    """`Client`/`Agent` through the trace-only proxy: one trace, UUID ids paired, errors whole."""
    path = DATA / "conductor-v11.jsons"
    records = read_trace(path)
    rows = _rows(records, str(path))
    assert [r[1] for r in rows] == ["client", "agent"] * 2 + ["client"] + ["agent"] * 5 + ["client"]
    assert rows[3] == ("error", "agent", None, '"a7e21f03-5b6c-4d8e-8f90-0a1b2c3d4e5f"')
    assert rows[9] == ("request", "agent", "session/request_permission", f'"{rows[9][3][1:-1]}"')
    assert records.filter(pl.col("kind") == "error")["error_code"].to_list() == [-32602]
    (head,) = headers(records).values()
    assert head["error_code_unknown"] == [] and "not_traced" not in head


def test_conductor_lowercase_error_keeps_its_text_and_says_the_code_is_unknown() -> None:
    """sacp-conductor <= 10's `{"error": text}` becomes an error without code, noted in the header."""
    (lines,) = _convert(DATA / "conductor-v10.jsons").values()
    errors = [r for r in lines[1:] if "error" in r.get("msg", {})]
    assert errors[0]["msg"]["error"] == {
        "message": 'Invalid params: "unsupported replayFrom cursor"'
    }
    assert [(e["seq"], e["line"]) for e in lines[0]["error_code_unknown"]] == [(4, 4), (11, 11)]
    assert lines[0]["error_code_unknown"][1]["message"].startswith("Resource not found: {\n")


def test_conductor_error_objects_are_kept_whole() -> None:
    """A lowercase-generation payload that is already an error object is not rewritten."""
    path = Path("x.jsons")
    event = {"type": "response", "ts": 1.0, "from": "agent", "to": "client", "id": 3,
             "is_error": True, "payload": {"code": -32002, "message": "nope"}}  # fmt: skip
    (_, lines), = importers.convert(path, json.dumps(event).encode())  # fmt: skip
    record, head = json.loads(lines[1]), json.loads(lines[0])
    assert record["msg"]["error"] == {"code": -32002, "message": "nope"}
    assert head["error_code_unknown"] == []


def test_conductor_debug_names_with_proxies_keeps_both_legs_and_says_what_is_missing() -> None:
    """With proxies the client leg has the client's requests, the agent leg the agent's messages."""
    client, agent = _convert(DATA / "conductor-v11-proxy.jsons").values()
    assert client[0]["leg"] == ["Client", "Proxy(0)"] and agent[0]["leg"] == [
        "Proxy(0)",
        "Proxy(1)",
    ]
    assert [r["src"] for r in client[1:]] == ["client", "agent"] * 3
    assert client[1]["msg"]["method"] == "_proxy/initialize"
    assert [(r["src"], r["msg"]["method"]) for r in agent[1:]] == [("agent", "session/update")]
    assert client[0]["not_traced"] == ["requests and notifications to the client"]
    assert agent[0]["not_traced"] == ["requests and notifications to the agent"]


@pytest.mark.parametrize(
    ("names", "chain"),
    [
        ([("Client", "Agent")], ["Client", "Agent"]),
        (
            [("Client", "Proxy(0)"), ("Proxy(0)", "Proxy(1)")],
            ["Client", "Proxy(0)", "Proxy(1)", "Agent"],
        ),
        ([("Client", "Proxy(0)"), ("Proxy(1)", "Proxy(0)")], ["Client", "Proxy(0)", "Proxy(1)"]),
        ([("Client", "Proxy(0)"), ("Proxy(0)", "Agent")], ["Client", "Proxy(0)", "Agent"]),
        ([("client", "proxy:0"), ("proxy:0", "agent")], ["client", "proxy:0", "agent"]),
    ],
)
def test_conductor_chain_names(names: list[tuple[str, str]], chain: list[str]) -> None:
    """The agent is `Agent` when named, else the one `Proxy(N)` that receives no request."""
    from acp_trace.trace.importers.conductor import chain as chain_of

    events = [{"type": "request", "from": f, "to": t} for f, t in names]
    assert chain_of(events) == chain


# ---------------------------------------------------------------- result shapes


def _pending_both(result: Any, agent_method: str = "fs/read_text_file") -> list[Any]:
    """session/load (client, id 1) and an agent request (id 1) pending, then a response."""
    return [
        _req("session/load", 1, {"sessionId": "s", "cwd": "/", "mcpServers": []}),
        _req(agent_method, 1, {"sessionId": "s", "path": "/a"}),
        {"jsonrpc": "2.0", "id": 1, **result},
    ]


SHAPE_CASES = [
    ("content answers the file read", {"result": {"content": "x"}}, "fs/read_text_file", "client", None),
    ("modes answer the load", {"result": {"modes": None}}, "fs/read_text_file", "agent", None),
    ("{} fits load and write", {"result": {}}, "fs/write_text_file", "agent", "its result fits both"),
    ("an unknown key fits neither", {"result": {"models": {}}}, "fs/read_text_file", "agent",
     "its result fits neither"),
    ("an error has no shape", {"error": {"code": -32603, "message": "x"}}, "fs/read_text_file",
     "agent", "an error has no shape"),
    ("a method without a schema may fit", {"result": {"content": "x"}}, "fs/stat", "client", None),
    ("a non-object result says nothing", {"result": None}, "fs/read_text_file", "agent",
     "its result fits both"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("result", "agent_method", "sender", "reason"),
    [c[1:] for c in SHAPE_CASES],
    ids=[c[0] for c in SHAPE_CASES],
)
def test_result_shape_decides_a_response_pending_on_both_sides(
    tmp_path: Path, result: Any, agent_method: str, sender: str, reason: str | None
) -> None:
    """A result pending on both sides answers the one request whose result type it fits."""
    head, *records = _bare(tmp_path, _pending_both(result, agent_method))
    assert records[2]["src"] == sender
    noted = {a["seq"]: a["reason"] for a in head["ambiguous"]}
    if reason is None:
        assert 3 not in noted
    else:
        assert reason in noted[3]


@pytest.mark.parametrize(
    ("method", "result", "fits"),
    [
        ("fs/read_text_file", {"content": ""}, True),
        ("fs/read_text_file", {"content": "", "_meta": {}}, True),
        ("fs/read_text_file", {}, False),
        ("session/load", {"content": ""}, False),
        ("session/load", {}, True),
        ("session/new", {"sessionId": "s"}, True),
        ("session/new", {}, False),
        ("session/prompt", {"stopReason": "end_turn"}, True),
        ("session/prompt", {"messageId": "m"}, True),
        ("terminal/output", {"output": ""}, False),
        ("proxy/successor", {"anything": 1}, True),
        ("_vendor/x", {}, None),
        ("session/load", [], None),
    ],
)
def test_result_fits(method: str, result: Any, fits: bool | None) -> None:
    """The shipped shapes: required keys present, no key the type does not list."""
    from acp_trace.trace.importers.jsonrpc import result_fits

    assert result_fits(method, result) is fits


def test_result_shapes_name_their_source() -> None:
    """The shipped table says which SDK schemas it was generated from."""
    from importlib.resources import files

    data = json.loads(files("acp_trace.trace.importers").joinpath("result_shapes.json").read_text())
    assert data["source"].startswith("@agentclientprotocol/sdk@2.4.0: schema/v1/schema.json")
    assert len(data["methods"]) > 30


# ---------------------------------------------------------------- thinkwell


def test_thinkwell_answers_get_the_ids_of_the_requests_they_answer() -> None:
    """The conductor's id counter is replayed: each answer carries its client request's id."""
    path = DATA / "thinkwell.jsonl"
    rows = _rows(read_trace(path), str(path))
    assert rows[:3] == [
        ("request", "client", "initialize", "0"),
        ("response", "agent", None, "0"),
        ("request", "client", "session/resume", "1"),
    ]
    assert ("request", "agent", "session/request_permission", "0") in rows
    assert rows[-1] == ("response", "agent", None, "1")


def test_thinkwell_header_says_what_is_not_traced() -> None:
    """The header names the chain, the bridge guess and what the source does not trace."""
    (lines,) = _convert(DATA / "thinkwell-v1.jsonl").values()
    head = lines[0]
    assert head["imported_from"] == "thinkwell" and head["timing"] == "source"
    assert head["proxies"] == 0 and head["mcp_bridge"] is True
    assert head["not_traced"] == ["responses sent by the client"]
    assert head["unmatched_responses"] == 0 and head["unconverted"] == 0
    assert lines[1]["t_ns"] == 0 and all(r["t_ns"] % 1_000_000 == 0 for r in lines[1:])


def test_thinkwell_session_new_takes_a_bridge_id(tmp_path: Path) -> None:
    """With the MCP bridge on, session/new takes an id for its bridge session before it goes."""

    def line(direction: str, msg: dict[str, Any]) -> str:
        src, tgt = ("client", "agent") if direction == "left-to-right" else ("agent", "proxy[-1]")
        return json.dumps({"timestamp": "2026-12-01T10:00:00.000Z", "direction": direction,
                           "source": src, "target": tgt, "message": msg}) + "\n"  # fmt: skip

    def l2r(dispatch: dict[str, Any]) -> dict[str, Any]:
        return {"type": "left-to-right", "targetIndex": 0, "dispatch": dispatch}

    def r2l(dispatch: dict[str, Any]) -> dict[str, Any]:
        return {"type": "right-to-left", "sourceIndex": {"type": "successor"}, "dispatch": dispatch}

    path = tmp_path / "tw.jsonl"
    path.write_text("".join([
        line("left-to-right", l2r({"type": "request", "id": 7, "method": "initialize"})),
        line("right-to-left", r2l({"type": "response", "id": 1, "result": {}})),
        line("left-to-right", l2r({"type": "request", "id": 8, "method": "session/new"})),
        line("right-to-left", r2l({"type": "response", "id": 3, "result": {"sessionId": "s"}})),
    ]))  # fmt: skip
    (lines,) = _convert(path).values()
    assert [r["msg"]["id"] for r in lines[1:]] == [7, 7, 8, 8]
    assert lines[0]["mcp_bridge"] is True and lines[0]["unmatched_responses"] == 0


# ---------------------------------------------------------------- acpx


def test_acpx_output_is_read_with_every_direction_decided() -> None:
    """acpx's JSON output: every message's direction follows from the protocol, ordering only."""
    path = DATA / "acpx-exec.jsonl"
    (lines,) = _convert(path).values()
    head, records = lines[0], lines[1:]
    assert head["imported_from"] == "acpx" and head["timing"] == "ordering-only"
    assert head["ambiguous"] == [] and head["unconverted"] == 0
    assert [r["src"] for r in records] == ["client", "agent"] * 3 + ["agent"] * 2
    raw = path.read_bytes().splitlines()
    assert lines[1] is not None and json.loads(raw[0]) == records[0]["msg"]


def test_acpx_own_lines_go_to_the_header() -> None:
    """acpx's status line and error reports are kept in `tool_output`, not taken as messages."""
    (lines,) = _convert(DATA / "acpx-resume.jsonl").values()
    assert lines[0]["tool_output"] == [{"line": 1, "value": {
        "action": "session_ensured", "created": True, "acpxRecordId": "sess-ax",
        "acpxSessionId": "sess-ax"}}]  # fmt: skip
    assert lines[1]["msg"]["method"] == "initialize"
    from acp_trace.trace.importers import acpx

    report = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32002, "message": "no session", "data": {"acpxCode": "NO_SESSION"}},
    }
    assert acpx.is_own(report) and not acpx.is_own({**report, "id": 3})  # fmt: skip


# ---------------------------------------------------------------- odd values in a capture


@pytest.mark.parametrize(
    ("method", "reason"),
    [
        ({"a": 1}, "unknown method {'a': 1}"),
        (["session/prompt"], "unknown method ['session/prompt']"),
        # near misses: a method string, known or not
        ("x/unknown", "unknown method 'x/unknown'"),
    ],
)
def test_a_bare_method_that_is_no_string_is_an_unknown_method(
    tmp_path: Path, method: Any, reason: str
) -> None:
    """A bare message whose method is an object or a list is converted, its direction a
    guess that says the method is unknown (it was a crash: an object cannot be looked up)."""
    lines = _bare(tmp_path, [{"jsonrpc": "2.0", "method": method}])
    assert lines[0]["ambiguous"][0]["reason"] == reason


@pytest.mark.parametrize(
    ("direction", "problem"),
    [
        ({"x": 1}, "unknown direction {'x': 1}"),
        (["client -> agent"], "unknown direction ['client -> agent']"),
        # near miss: a direction the format names
        ("client -> agent", None),
    ],
)
def test_an_inspector_direction_that_is_no_string_is_unknown(
    tmp_path: Path, direction: Any, problem: str | None
) -> None:
    """A frame whose direction is an object or a list is left unconverted, said why."""
    head = {"type": "header", "format": "acp-inspector-trace", "version": 1}
    frame = {"connection": "c", "direction": direction, "encoding": "utf8",
             "frame": json.dumps(_req("initialize", 1))}  # fmt: skip
    good = {**frame, "direction": "agent -> client"}
    path = tmp_path / "bridge.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in (head, good, frame)))
    (lines,) = _convert(path).values()
    assert lines[1]["src"] == "agent"
    assert lines[2].get("message") == problem
    assert (lines[2].get("src") == "client") is (problem is None)


@pytest.mark.parametrize(
    ("ts", "t_ns"),
    [
        (1e308, None),  # beyond 64 bits of nanoseconds: no time
        (-1e308, None),
        (9.3e9, None),  # 9.3e18 ns from the first event: past 2**63
        # near misses: times a record can hold
        (9.2e9, 9_200_000_000_000_000_000 - 12_300_000),
        (0.5, 500_000_000 - 12_300_000),
    ],
)
def test_conductor_times_beyond_64_bits_are_no_times(
    tmp_path: Path, ts: float, t_ns: int | None
) -> None:
    """A conductor event's time that the trace's 64-bit nanoseconds cannot hold is recorded
    without a time (it was an OverflowError for 1e308); others keep theirs."""
    first = {"type": "notification", "ts": 0.0123, "protocol": "acp", "from": "client",
             "to": "agent", "method": "x/a", "params": {}}  # fmt: skip
    path = tmp_path / "c.jsons"
    path.write_text(json.dumps(first) + "\n" + json.dumps({**first, "ts": ts}) + "\n")
    (lines,) = _convert(path).values()
    assert lines[1]["t_ns"] == 0
    assert lines[2]["t_ns"] == (None if t_ns is None else pytest.approx(t_ns, rel=1e-12))


def test_a_conductor_time_no_float_holds_is_no_time(tmp_path: Path) -> None:
    """An integer `ts` beyond any float (10**400) is recorded without a time, not a crash."""
    first = {"type": "notification", "ts": 0.0123, "protocol": "acp", "from": "client",
             "to": "agent", "method": "x/a", "params": {}}  # fmt: skip
    path = tmp_path / "c.jsons"
    path.write_text(json.dumps(first) + "\n" + json.dumps({**first, "ts": 10**400}) + "\n")
    (lines,) = _convert(path).values()
    assert [r["t_ns"] for r in lines[1:3]] == [0, None]
