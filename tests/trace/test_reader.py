"""Trace format v1 round trip: what the recorder's writer encodes, the reader gives back."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from acp_trace.errors import InputError
from acp_trace.jsonrpc import is_message
from acp_trace.record import writer as trace_writer
from acp_trace.trace.format import encode_header
from acp_trace.trace.reader import read_trace, skipped_inputs

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": st.integers() | st.text(max_size=5)},
    optional={
        "method": st.sampled_from(["initialize", "session/update", "x/y"]),
        "params": json_values,
    },
)
lines = st.one_of(
    st.binary(max_size=100),
    st.text(max_size=60).map(str.encode),
    st.sampled_from([b"NaN", b"[1, -Infinity]", b'{"a": "NaN"}']),
    st.tuples(json_values | messages, st.sampled_from([b"", b" ", b"\r", b"\t "])).map(
        lambda pair: pair[1] + json.dumps(pair[0]).encode() + pair[1]
    ),
).map(lambda line: line.replace(b"\n", b""))


def write_trace(path: Path, items: list[trace_writer.Item]) -> None:
    """Write a trace through the recorder's own encoder (redaction on, no record limit)."""
    head = {"started_at": "2026-11-30T10:11:06.123456Z", "command": ["agent"], "cwd": "/", "pid": 1}
    data = encode_header({**head, "recorder": "acp-trace test"})
    data += b"".join(trace_writer.encode_item(item, redact=True, max_bytes=None) for item in items)
    for line in data.splitlines():
        json.loads(line, parse_constant=reject)  # every line is standard JSON
    path.write_bytes(data)


def reject(name: str) -> None:
    raise ValueError(f"{name} in a trace line")


def is_batch(line: bytes) -> bool:
    try:
        value = json.loads(line)
    except ValueError:
        return False
    return isinstance(value, list) and bool(value) and all(is_message(m) for m in value)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["client", "agent", "stderr"]), lines), max_size=25))
def test_written_lines_read_back_as_the_same_payloads(recorded: list[tuple[str, bytes]]) -> None:
    """Random lines encoded by the writer read back: msg is the stripped JSON, text/b64 exact."""
    recorded = [(src, line) for src, line in recorded if not is_batch(line)]
    items = [trace_writer.Item(n, n * 10, src, line) for n, (src, line) in enumerate(recorded, 1)]
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "t.jsonl"
        write_trace(path, items)
        frame = read_trace(path)
    frame = frame.filter(frame["kind"] != "header")
    assert frame["seq"].to_list() == [item.seq for item in items]
    assert frame["src"].to_list() == [src for src, _ in recorded]
    for row, (src, line) in zip(frame.iter_rows(named=True), recorded, strict=True):
        if row["msg"] is not None:
            assert src != "stderr"
            assert row["msg"].encode() == line.strip(b" \t\r")
        elif row["kind"] == "text" and row["text"] == f"<redacted: {len(line)} bytes>":
            assert src != "stderr"  # a line that may hold a secret (redaction/redactor.py)
        elif row["kind"] == "text":
            assert row["text"].encode() == line
        else:
            assert row["kind"] == "b64" and base64.b64decode(row["text"]) == line


def test_tap_events_and_flags_read_back(tmp_path: Path) -> None:
    """Tap events become event rows; eol, redacted and truncated records stay readable."""
    secret = b'{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"k","key":"s"}}'
    items = [
        trace_writer.Item(1, 5, "client", secret),
        trace_writer.Item(2, 6, "agent", b"partial", eol=False),
        trace_writer.Item(3, 7, "tap", event={"event": "dropped", "count": 3}),
        trace_writer.Item(4, 8, "tap", event={"event": "exit", "code": None, "signal": 15}),
    ]
    path = tmp_path / "t.jsonl"
    write_trace(path, items)
    frame = read_trace(path)
    rows = frame.filter(frame["kind"] != "header").to_dicts()
    assert json.loads(rows[0]["msg"])["params"] == {"methodId": "k", "key": "<redacted>"}
    assert rows[1]["kind"] == "text" and rows[1]["text"] == "partial"
    assert [(r["kind"], r["event"]) for r in rows[2:]] == [("event", "dropped"), ("event", "exit")]
    assert json.loads(rows[3]["text"]) == {"event": "exit", "code": None, "signal": 15}
    assert frame.filter(frame["kind"] == "malformed").is_empty()


# ---------------------------------------------------------------- inputs as they are on disk

HEADER = b'{"acp_trace":1,"kind":"header","command":["agent"]}\n'
RECORD = b'{"seq":1,"t_ns":5,"src":"agent","msg":{"jsonrpc":"2.0","method":"x"}}\n'


def test_files_that_are_no_trace_are_skipped_in_a_directory(tmp_path: Path) -> None:
    """A stray log, an empty file, a half-written header and a JSON file that is no trace are
    skipped (one `skipped` row each, with the reason), the good trace is read."""
    (tmp_path / "good.jsonl").write_bytes(HEADER + RECORD)
    (tmp_path / "agent.log").write_text("starting agent\n")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "half.jsonl").write_bytes(b'{"acp_trace":1,"kind":"hea')
    (tmp_path / "config.json").write_text('{"theme": "dark"}\n')
    records = read_trace(tmp_path)
    skipped = skipped_inputs(records)
    names = [Path(t).name for t in skipped["trace"]]
    assert names == ["agent.log", "config.json", "empty.jsonl", "half.jsonl"]
    assert "found an empty file" in skipped["problem"][2]
    assert not any(str(tmp_path) in p for p in skipped["problem"])  # the reason, not the path
    good = records.filter(pl.col("kind") != "skipped")
    assert good["trace"].unique().to_list() == [str(tmp_path / "good.jsonl")]


def test_a_file_named_itself_that_is_no_trace_is_an_error(tmp_path: Path) -> None:
    """Named on the command line, a file that is not a trace raises InputError."""
    (tmp_path / "agent.log").write_text("starting agent\n")
    with pytest.raises(InputError, match=r"agent\.log: expected an acp-trace v1 trace"):
        read_trace([tmp_path / "agent.log"])


def test_a_directory_with_no_readable_trace_is_an_error(tmp_path: Path) -> None:
    """When every candidate is skipped, the directory yields no trace: InputError says why."""
    (tmp_path / "a.log").write_text("log line\n")
    (tmp_path / "b.jsonl").write_bytes(b"")
    with pytest.raises(InputError) as info:
        read_trace([tmp_path])
    text = str(info.value)
    assert text.startswith(f"{tmp_path}: no trace among its 2 files (a.log: expected")
    assert "b.jsonl: expected" in text


def test_concatenated_traces_are_read_one_by_one(tmp_path: Path) -> None:
    """`cat a.jsonl b.jsonl > c.jsonl` gives traces c.jsonl#1 and c.jsonl#2, each with its
    header and records (file line numbers kept); a header key inside a string splits nothing."""
    noisy = (
        b'{"seq":2,"t_ns":6,"src":"stderr","text":"{\\"acp_trace\\":1,\\"kind\\":\\"header\\"}"}\n'
    )
    path = tmp_path / "c.jsonl"
    path.write_bytes(HEADER + RECORD + noisy + HEADER + RECORD)
    records = read_trace(path)
    name = str(path)
    assert records["trace"].to_list() == [f"{name}#1"] * 3 + [f"{name}#2"] * 2
    assert records["kind"].to_list() == ["header", "notification", "text", "header", "notification"]
    assert records["line"].to_list() == [1, 2, 3, 4, 5]


def test_a_single_trace_keeps_its_name(tmp_path: Path) -> None:
    """A file with one header (and a header key only inside a message) is not split."""
    noisy = b'{"seq":2,"t_ns":6,"src":"stderr","text":"{\\"acp_trace\\":1}"}\n'
    path = tmp_path / "one.jsonl"
    path.write_bytes(HEADER + RECORD + noisy)
    assert read_trace(path)["trace"].unique().to_list() == [str(path)]


# ---------------------------------------------------------------- the native path, exactly

HEAD = b'{"acp_trace":1,"kind":"header","command":["x"]}\n'
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}'
UPDATE = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"text":"x"}}}}'
NEAR_MISSES = {
    "as written": b'{"seq":1,"t_ns":2,"src":"agent","msg":' + UPDATE + b"}",
    "spaces": b'{"seq": 1, "t_ns": 2, "src": "agent", "msg": ' + UPDATE + b" }",
    "keys out of order": b'{"msg":' + ANSWER + b',"src":"agent","t_ns":2,"seq":1}',
    "msg twice": b'{"seq":1,"t_ns":2,"src":"agent","msg":' + ANSWER + b',"msg":' + UPDATE + b"}",
    "seq after msg": b'{"seq":1,"t_ns":2,"src":"agent","msg":' + ANSWER + b',"seq":3}',
    "escaped key": b'{"seq":1,"t_ns":2,"src":"agent","m\\u0073g":' + ANSWER + b"}",
    "escaped id key": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"2.0","\\u0069d":5,"result":{}}}',
    "t_ns null": b'{"seq":1,"t_ns":null,"src":"agent","msg":' + ANSWER + b"}",
    "t_ns missing": b'{"seq":1,"src":"agent","msg":' + ANSWER + b"}",
    "CRLF": b'{"seq":1,"t_ns":2,"src":"agent","msg":' + ANSWER + b"}\r",
    "CR inside": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"2.0",\r"id":1,"result":{}}}',
    "text": b'{"seq":1,"t_ns":2,"src":"stderr","text":"log \\u001b[31m \\"q\\" \xc3\xa9"}',
    "text and msg": b'{"seq":1,"t_ns":2,"src":"agent","text":"x","msg":' + ANSWER + b"}",
    "truncated text": b'{"seq":1,"t_ns":2,"src":"agent","text":"ab","truncated":true,"bytes":9}',
    "b64": b'{"seq":1,"t_ns":2,"src":"agent","b64":"aGVsbG8="}',
    "tap event": b'{"seq":1,"t_ns":2,"src":"tap","event":"exit","code":0}',
    "batch": b'{"seq":1,"t_ns":2,"src":"client","msg":[' + ANSWER + b"," + UPDATE + b"]}",
    "not UTF-8": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"2.0","method":"\xff"}}',
    "lone surrogate": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"2.0","method":"\\ud83d"}}',
    "id beyond 64 bits": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}}',
    "float id": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"2.0","id":1e2,"result":{}}}',
    "object id": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"2.0","id":{"a":1},"result":{}}}',
    "params list": b'{"seq":1,"t_ns":2,"src":"client","msg":{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}}',
    "numeric session": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"2.0","id":1,"result":{"sessionId":5},"error":{"data":{"sessionId":"d"}}}}',
    "error data string": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"data":"why"}}}',
    "error code huge": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"2.0","id":1,"error":{"code":9223372036854775808}}}',
    "not a message": b'{"seq":1,"t_ns":2,"src":"agent","msg":{"jsonrpc":"1.0","id":1}}',
    "msg a number": b'{"seq":1,"t_ns":2,"src":"agent","msg":5}',
    "seq beyond 64 bits": b'{"seq":9223372036854775808,"t_ns":2,"src":"agent","msg":'
    + ANSWER
    + b"}",
    "seq negative zero": b'{"seq":-0,"t_ns":2,"src":"agent","msg":' + ANSWER + b"}",
    "unknown key": b'{"seq":1,"t_ns":2,"src":"agent","note":"n","msg":' + ANSWER + b"}",
    "blank": b"   ",
    "damaged": b'{"seq":1,"t_ns":2,"src":"agent","msg":{',
    "deep": b'{"seq":1,"t_ns":2,"src":"agent","msg":' + b"[" * 3000 + b"]" * 3000 + b"}",
    "header again": HEAD.rstrip(),
}


@pytest.fixture(autouse=True)
def _native_path_for_small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' traces are small: let the native path take blocks of any size."""
    from acp_trace.trace import blocks

    monkeypatch.setattr(blocks, "FAST_MIN_BYTES", 0)


def _line_reader_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from acp_trace.trace import blocks

    monkeypatch.setattr(blocks, "_fast", lambda *args: (None, 0))
    monkeypatch.setattr(blocks, "_fast_rows", lambda *args: None)


@pytest.mark.parametrize("columns", [True, False], ids=["columns", "row tuples"])
@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_native_path_reads_every_line_as_the_line_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, columns: bool
) -> None:
    """Among lines the native path reads (into columns, or into row tuples for a small
    block), any near miss reads the same as by the line reader."""
    from acp_trace.trace import blocks

    monkeypatch.setattr(blocks, "FAST_MIN_BYTES", 0 if columns else 1 << 30)
    ok = b'{"seq":%d,"t_ns":%d,"src":"agent","msg":' + UPDATE + b"}"
    body = [ok % (i, i) for i in range(10, 200)]
    body.insert(100, NEAR_MISSES[name])
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEAD + b"\n".join(body) + b"\n")
    native = read_trace(path)
    _line_reader_only(monkeypatch)
    assert_frame_equal(native, read_trace(path))


@pytest.mark.parametrize("min_bytes", [0, 1 << 30], ids=["columns", "row tuples"])
def test_lines_as_written_take_the_native_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, min_bytes: int
) -> None:
    """The recorder's own lines never reach the line reader (but the header)."""
    from acp_trace.trace import blocks as native
    from acp_trace.trace import lines

    monkeypatch.setattr(native, "FAST_MIN_BYTES", min_bytes)
    calls: list[int] = []
    original = lines.parse_line
    monkeypatch.setattr(
        lines, "parse_line", lambda *a, **k: calls.append(a[2]) or original(*a, **k)
    )
    from acp_trace.trace import blocks, native

    monkeypatch.setattr(blocks, "parse_line", lines.parse_line)
    monkeypatch.setattr(native, "parse_line", lines.parse_line)
    body = [NEAR_MISSES["as written"], NEAR_MISSES["text"], NEAR_MISSES["t_ns null"]] * 50
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEAD + b"\n".join(body) + b"\n")
    assert read_trace(path).height == 151
    assert calls == [1]


def _pool_cuts_small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    from acp_trace.trace import pool

    monkeypatch.setattr(pool, "RANGE_BYTES", 4096)


@pytest.mark.parametrize("handoff", ["shared memory", "unwritable", "pipe"])
def test_workers_read_the_same_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handoff: str
) -> None:
    """Read in 2 processes (large files cut in byte ranges), the table is the same, row for row:
    line numbers, damaged lines, a cut last line, skipped files and concatenated traces; the
    rows handed on in files (none left behind), in a directory the workers cannot write to, or
    through the pipe."""
    from contextlib import nullcontext

    from acp_trace.trace import handoff as files
    from acp_trace.trace import pool

    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(files, "SHARED_MEMORY", str(shm))
    if handoff == "unwritable":  # (the workers may be started by a fork server: no patch there)
        monkeypatch.setattr(pool, "handoff_directory", lambda: nullcontext(str(tmp_path / "gone")))
    if handoff == "pipe":
        monkeypatch.setattr(files.tempfile, "mkdtemp", _refuse)
    folder = tmp_path / "traces"
    folder.mkdir()
    ok = b'{"seq":%d,"t_ns":%d,"src":"agent","msg":' + UPDATE + b"}"
    body = [ok % (i, i) for i in range(1, 400)]
    body[50:50] = [NEAR_MISSES[n] for n in sorted(NEAR_MISSES) if n != "header again"]
    (folder / "big.jsonl").write_bytes(HEAD + b"\n".join(body) + b"\n" + b'{"seq":9,"t_ns"')
    (folder / "cat.jsonl").write_bytes(HEAD + b"\n".join(body[:300]) + b"\n" + HEAD + body[0])
    (folder / "skip.jsonl").write_bytes(bytes(range(256)))
    for i in range(30):
        (folder / f"small{i:02d}.jsonl").write_bytes(HEAD + b"\n".join(body[i : i + 5]) + b"\n")
    serial = read_trace(folder)
    _pool_cuts_small_ranges(monkeypatch)
    parallel = read_trace(folder, workers=2)
    assert_frame_equal(serial, parallel)
    assert serial.filter(pl.col("trace").str.ends_with("cat.jsonl#2")).height == 2
    assert skipped_inputs(parallel).height == 1
    assert list(shm.iterdir()) == []


def _refuse(*_args: object, **_kwargs: object) -> None:
    raise OSError(28, "No space left on device")


def test_workers_raise_for_a_file_named_that_is_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a pool too, a file named on its own that is no trace is an error, not a skip; the
    rows already handed on are removed with their directory."""
    from acp_trace.trace import handoff

    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(handoff, "SHARED_MEMORY", str(shm))
    (tmp_path / "a.jsonl").write_bytes(HEAD)
    (tmp_path / "b.jsonl").write_bytes(b"\x00\x01 not a trace\n")
    with pytest.raises(InputError, match=r"b\.jsonl"):
        read_trace([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], workers=2)
    assert list(shm.iterdir()) == []


def test_workers_none_reads_small_input_in_this_process(tmp_path: Path) -> None:
    """`workers=None` starts no pool for an input too small to gain from one."""
    from acp_trace.trace import pool
    from acp_trace.trace.paths import find_traces

    path = tmp_path / "t.jsonl"
    path.write_bytes(HEAD + NEAR_MISSES["as written"] + b"\n")
    assert pool.choose_workers(find_traces([path]), None) == 1
    assert pool.choose_workers(find_traces([path]), 3) == 3


def test_fork_is_refused_once_polars_threads_run() -> None:
    """A pool is forked only while no thread but the allocator's runs; after polars has run
    in parallel, workers come from a fork server (a fork would deadlock in the child)."""
    from acp_trace.trace import pool

    pl.DataFrame({"a": list(range(200_000))}).sort("a").group_by("a").len()
    assert not pool._fork_is_safe()
    assert pool.worker_context().get_start_method() == "forkserver"


def test_a_fresh_process_forks_its_workers(tmp_path: Path) -> None:
    """In a process where polars has not run yet (the CLI), workers are forked, and read the
    same table as one process does."""
    import subprocess
    import sys

    ok = b'{"seq":%d,"t_ns":%d,"src":"agent","msg":' + UPDATE + b"}"
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEAD + b"\n".join(ok % (i, i) for i in range(1, 300)) + b"\n")
    script = f"""
from acp_trace.trace import pool
from acp_trace.trace.reader import read_trace
pool.RANGE_BYTES = 4096
assert pool._fork_is_safe() and pool.worker_context().get_start_method() == "fork"
parallel = read_trace({str(path)!r}, workers=2)
assert parallel.equals(read_trace({str(path)!r})), "tables differ"
print(parallel.height)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["300"]


_ORPHANS = """
import multiprocessing, os, sys
from acp_trace.trace import pool
from acp_trace.trace.paths import find_traces
found = find_traces([sys.argv[1]])
results = pool.read_all(found, None, 2)
next(results)  # the pool has started
print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
os._exit(0)  # gone without cleaning up, as after SIGKILL
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def test_a_pools_workers_die_with_their_parent(tmp_path: Path) -> None:
    """Reading workers whose parent dies without a word end too (they would otherwise wait
    for work forever, each holding the others' end of the pool's queue)."""
    import subprocess
    import sys
    import time

    for i in range(6):
        (tmp_path / f"t{i}.jsonl").write_bytes(HEAD + NEAR_MISSES["as written"] + b"\n")
    done = subprocess.run(
        [sys.executable, "-c", _ORPHANS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    pids = [int(p) for p in done.stdout.split()]
    assert pids  # (one task here: one worker)
    deadline = time.monotonic() + 10
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(p) for p in pids)


def test_a_process_whose_parent_is_gone_exits_at_once() -> None:
    """`die_with_parent` with a parent that is not (or no longer) this process's exits."""
    import os

    from acp_trace.trace.workers import die_with_parent

    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        die_with_parent(os.getppid() + 1_000_000)
        os._exit(0)
    _pid, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 1
