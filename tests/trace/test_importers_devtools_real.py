"""acp-devtools' export as the real acp-devtools 0.4.0 wrote it (tests/peers/
make_devtools_captures.py; docs/importing.md): the import agrees with `acp-trace record`'s
trace of the same session, ends where acp-devtools saw the agent exit, and says what a capture
evidently lacks (a request without a response, a capture without an end) as a warning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import acp_trace
from acp_trace.analysis.summary import summarize
from acp_trace.trace import importers
from clirun import Cli, runner
from testpaths import DATA as _DATA

DATA = _DATA / "imports"
STEM = "acp-devtools-0.4.0"
# (the export, the tap's trace of the same session): both made by one run
PAIRS = [
    (f"{STEM}-claude-v1.pretty.json", f"{STEM}-claude-v1.trace.jsonl"),
    (f"{STEM}-claude-v2.compact.json", f"{STEM}-claude-v2.trace.jsonl"),
    (f"{STEM}-crashed.compact.json", f"{STEM}-crashed.trace.jsonl"),
]
KILLED = DATA / f"{STEM}-killed.json"
SPLIT = DATA / f"{STEM}-split-utf8.json"
SAME = ["session", "request_id", "method", "protocol", "agent", "agent_version", "outcome",
        "history_updates", "history_bytes", "live_updates", "gap_source"]  # fmt: skip


def _records(path: Path) -> list[dict[str, Any]]:
    ((_, lines),) = importers.convert(path, path.read_bytes(), "acp-devtools")
    return [json.loads(line) for line in lines]


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """`acp-trace ...` run in-process in tmp_path."""
    return runner(tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize(("export", "trace"), PAIRS)
def test_replays_agree_with_the_tap_on_the_same_session(export: str, trace: str) -> None:
    """Every replay row of the import has the tap's outcome, counts and gap source (its times
    are acp-devtools' own, to the millisecond); the crashed agent's resume is `truncated` in
    both, since acp-devtools saw the agent exit."""
    mine, tap = acp_trace.replays(DATA / export), acp_trace.replays(DATA / trace)
    assert mine.height == tap.height > 0
    assert mine.select(SAME).rows() == tap.select(SAME).rows()
    for a, b in zip(mine["gap_ms"].to_list(), tap["gap_ms"].to_list(), strict=True):
        assert (a is None) == (b is None) and (a is None or abs(a - b) < 250)


@pytest.mark.parametrize(("export", "trace"), PAIRS)
def test_findings_agree_with_the_tap(export: str, trace: str) -> None:
    """`check` finds the same rules at the same severities on both (their seqs differ: the
    tap's trace interleaves the agent's stderr)."""
    mine, tap = acp_trace.check(DATA / export), acp_trace.check(DATA / trace)
    assert mine.height > 0
    assert sorted(mine.select("rule", "severity").rows()) == sorted(
        tap.select("rule", "severity").rows()
    )


@pytest.mark.parametrize(("export", "trace"), PAIRS)
def test_messages_are_the_lines_the_tap_saw(export: str, trace: str) -> None:
    """Each side's messages, in order, are the tap's byte for byte (`raw`), but for the few the
    tap itself redacted; the summary's counts by method and update kind are the tap's."""
    tap = [json.loads(line) for line in (DATA / trace).read_bytes().splitlines()]
    mine = _records(DATA / export)
    for src in ("client", "agent"):
        ours = [r for r in mine[1:] if r["src"] == src]
        theirs = [r for r in tap[1:] if r["src"] == src]
        assert len(ours) == len(theirs)
        same = [a["msg"] == b["msg"] for a, b in zip(ours, theirs, strict=True)]
        assert all(s or "redacted" in b for s, b in zip(same, theirs, strict=True))
    columns = ["messages", "sessions", "by_method", "by_update_kind"]
    assert (
        summarize(acp_trace.read_trace(DATA / export)).select(columns).rows()
        == summarize(acp_trace.read_trace(DATA / trace)).select(columns).rows()
    )


@pytest.mark.parametrize("name", [*(e for e, _ in PAIRS), KILLED.name, SPLIT.name])
def test_real_exports_are_detected(name: str) -> None:
    """Both layouts `export` writes (indented, `--no-pretty`) are recognized without --from."""
    path = DATA / name
    assert importers.detect(path, path.read_text()) == "acp-devtools"


def test_the_import_ends_where_acp_devtools_saw_the_agent_exit() -> None:
    """`session.endedAt` becomes a tap `exit` (code and signal unknown) at its time, the last
    record; the unanswered resume of the crashed agent is a warning, before it."""
    doc = json.loads((DATA / PAIRS[2][0]).read_text())
    records = _records(DATA / PAIRS[2][0])
    head, last = records[0], records[-1]
    assert (last["event"], last["code"], last["signal"]) == ("exit", None, None)
    ended = doc["session"]["endedAt"] - doc["session"]["startedAt"]
    assert last["t_ns"] == ended * 1_000_000
    (warning,) = head["warnings"]
    assert "seq 3 session/resume (id 1, from the client)" in warning
    assert records[-2] == {"seq": last["seq"] - 1, "t_ns": last["t_ns"], "src": "tap",
                           "event": "error", "message": warning, "cause": "capture"}  # fmt: skip


def test_a_killed_capture_is_imported_with_what_it_lacks() -> None:
    """acp-devtools killed mid-replay (endedAt null), the export trimmed to its first 40 and
    last 20 messages: every message kept is converted, no `exit` is invented (the replay stays
    `open`), a `dropped` event stands where acp-devtools' seq skips, and three warnings say
    what is missing: the trimmed messages, the resume's response, the capture's end."""
    records = _records(KILLED)
    head = records[0]
    assert head["ended_at"] is None and head["unconverted"] == 0
    assert head["missing_seqs"] == [[41, 7798]]
    assert sum(r["src"] in ("client", "agent") for r in records[1:]) == 60
    assert not any(r.get("event") == "exit" for r in records[1:])
    dropped = next(r for r in records[1:] if r.get("event") == "dropped")
    assert (dropped["seq"], dropped["count"], dropped["stream"]) == (41, 7758, None)
    assert [r.get("cause") for r in records[1:] if r.get("event") == "error"] == ["capture"] * 3
    trimmed, unanswered, endless = head["warnings"]
    assert trimmed.startswith("7,758 messages of the capture are not in the export: ")
    assert "seq skips 41 to 7798" in trimmed
    assert unanswered.startswith("1 request without a response in the capture: seq 3")
    assert endless.startswith("the capture has no end (session.endedAt is null)")
    (row,) = acp_trace.replays(KILLED).select("outcome", "history_updates").rows()
    assert row == ("open", 57)


def test_the_cli_warns_of_what_a_capture_lacks(cli: Cli, tmp_path: Path) -> None:
    """`acp-trace import` writes the trace and warns on stderr, exit 0; `summary` shows the
    warnings; `check` and `replays` read it, with --from and without."""
    done = cli("import", str(KILLED), "-o", str(tmp_path / "k.jsonl"))
    assert done.code == 0, done.err
    assert done.err.count(f"acp-trace: {KILLED}: ") == 3
    assert "the capture has no end" in done.err
    summary = cli("summary", str(KILLED), width=None)
    assert summary.code == 0 and "1 request without a response in the capture" in summary.out
    assert "  lost records: 7,758 dropped from the source\n" in summary.out
    assert "  importer error at seq 63: 1 request without" in summary.out
    for args in (["--from", "acp-devtools"], []):
        assert cli("check", *args, str(KILLED)).code in (0, 1)
        replays = cli("replays", *args, str(DATA / PAIRS[0][0]), width=None)
        assert replays.code == 0 and replays.out.count("v1_loaded") == 2


def test_messages_the_export_redacted_are_listed(tmp_path: Path) -> None:
    """The default export writes a message it redacted again as JSON.stringify(payload)
    (storage/redact.ts): its seq goes to the header's `export_redacted`; no other message."""
    doc = json.loads((DATA / PAIRS[0][0]).read_text())
    msg = doc["messages"][0]
    msg["payload"]["params"]["clientCapabilities"]["_meta"]["authorization"] = "<REDACTED>"
    msg["raw"] = json.dumps(msg["payload"], separators=(",", ":"))
    path = tmp_path / "redacted.json"
    path.write_text(json.dumps(doc, indent=4))
    assert _records(path)[0]["export_redacted"] == [msg["seq"]]
    assert _records(DATA / PAIRS[0][0])[0]["export_redacted"] == []


def test_the_real_exports_have_the_shape_the_source_gives() -> None:
    """What the fixture written from the source did not show: message keys in the order
    rowToMessage builds them (method and rpcId after payload), ids read back from SQLite's
    text, `exportedAt`/`endedAt` present, one trailing newline."""
    text = (DATA / PAIRS[0][0]).read_text()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    doc = json.loads(text)
    request = doc["messages"][0]
    assert list(request) == ["seq", "timestamp", "direction", "kind", "raw", "payload",
                             "method", "rpcId"]  # fmt: skip
    assert {m["direction"] for m in doc["messages"]} == {"editor-to-agent", "agent-to-editor"}
    assert pl.Series([m["seq"] for m in doc["messages"]]).is_sorted()


def test_a_character_split_between_two_reads_is_flagged() -> None:
    """split_utf8_agent.py wrote "日本語のテキスト" in two writes cut inside "日"; the client got
    it whole, acp-devtools captured three U+FFFD: the message is kept as captured, listed in
    `replacement_chars`, and a warning says why its characters are lost. Only that one."""
    records = _records(SPLIT)
    head = records[0]
    text = records[2]["msg"]["params"]["update"]["content"]["text"]
    assert text == "\ufffd\ufffd\ufffd本語のテキスト"
    assert head["replacement_chars"] == [2] and head["unconverted"] == 0
    (warning,) = head["warnings"]
    assert warning.startswith("1 message of the capture holds U+FFFD (seq 2): ")
    assert all(_records(DATA / e)[0]["replacement_chars"] == [] for e, _ in PAIRS)


def test_a_message_missing_from_the_export_qualifies_marker_findings(tmp_path: Path) -> None:
    """Near miss of the claude v2 export: one replayed update taken out of the file, so seq
    skips inside the resume's window; marker-missing, an error on the whole file, becomes a
    warning that says a record was lost there (the marker could have been it)."""
    doc = json.loads((DATA / PAIRS[1][0]).read_text())
    marker = ["marker-missing"]
    assert acp_trace.check(DATA / PAIRS[1][0], rules=marker)["severity"].to_list() == ["error"]
    del doc["messages"][10]
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(doc))
    (finding,) = acp_trace.check(path, rules=marker).select("rule", "severity", "message").rows()
    assert finding[:2] == ("marker-missing", "warning")
    assert "1 dropped" in finding[2]
    assert _records(path)[0]["missing_seqs"] == [[11, 11]]
