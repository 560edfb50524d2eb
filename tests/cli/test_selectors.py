"""Selectors that match nothing are errors that show the choices; a chart of traces without
timestamps says so instead of drawing nothing."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from clirun import Cli
from tracebuilder import TraceBuilder


def _untimed(trace: Path, out: Path) -> Path:
    """The same trace without timestamps (what an ordering-only import gives)."""
    lines = trace.read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines[1:]]
    for rec in records:
        rec.pop("t_ns", None)
    out.write_bytes(b"".join(x + b"\n" for x in [lines[0], *map(orjson.dumps, records)]))
    return out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--session", "NOSUCH"],
            "--session NOSUCH: no such session; expected one of: sess_1, child_1, sess_2",
        ),
        (
            ["--request", "99"],
            "--request 99: no such request; expected one of: 2, 3",
        ),
        (
            ["--trace", "other.jsonl"],
            "--trace other.jsonl: no such trace; expected one of: t.jsonl",
        ),
        (
            ["--session", "sess_2", "--request", "2"],
            "--request 2: no such request among the replays of session sess_2; expected one of: 3",
        ),
    ],
)
def test_plot_replay_with_a_selector_that_matches_nothing(
    cli: Cli, trace: Path, args: list[str], message: str
) -> None:
    """plot --kind replay --session/--request/--trace NOSUCH: exit 2, the choices named, no file."""
    result = cli("plot", "t.jsonl", "--kind", "replay", "-o", "r.png", *args)
    assert (result.code, result.out, result.err) == (2, "", f"acp-trace: {message}\n")
    assert not (trace.parent / "r.png").exists()


def test_plot_replay_with_a_selector_that_matches(cli: Cli, trace: Path) -> None:
    """A child session, a request id and the trace's file name each choose a replay."""
    for args in (["--session", "child_1"], ["--request", "3"], ["--trace", "t.jsonl"]):
        result = cli("plot", "t.jsonl", "--kind", "replay", "-o", "r.png", *args)
        assert (result.code, result.out) == (0, "wrote r.png\n")


def test_replay_selectors_belong_to_the_replay_chart(cli: Cli, trace: Path) -> None:
    """--session with --kind gap is a usage error, not silently ignored."""
    result = cli("plot", "t.jsonl", "--kind", "gap", "-o", "g.png", "--session", "sess_1")
    assert result.code == 2
    assert result.err == (
        "acp-trace: --session, --request and --trace choose a replay: use --kind replay or weight, "
        "not gap\n"
    )


def test_timeline_of_a_session_that_is_not_there(cli: Cli, trace: Path) -> None:
    """timeline --session NOSUCH: exit 2 with the sessions of the traces."""
    result = cli("timeline", "t.jsonl", "--session", "NOSUCH")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "acp-trace: --session NOSUCH: not among the sessions of these traces "
        "(sess_1, child_1, sess_2)\n"
    )


def test_a_long_list_of_choices_is_cut(cli: Cli, tmp_path: Path) -> None:
    """Past ten choices the message says how many more there are."""
    b = TraceBuilder()
    for n in range(14):
        b.request("session/prompt", {"sessionId": f"s{n:02}", "prompt": []})
    b.write(tmp_path / "many.jsonl")
    result = cli("timeline", "many.jsonl", "--session", "x")
    assert result.err.endswith("s00, s01, s02, s03, s04, s05, s06, s07, s08, s09 and 4 more)\n")


@pytest.mark.parametrize("kind", ["gap", "replay", "weight", "latency"])
def test_a_chart_of_traces_without_timestamps_says_no_timestamps(
    cli: Cli, trace: Path, kind: str
) -> None:
    """Every trace ordering-only: exit 2 with 'no timestamps', not an empty chart."""
    _untimed(trace, trace.parent / "u.jsonl")
    result = cli("plot", "u.jsonl", "--kind", kind, "-o", "c.png")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "acp-trace: u.jsonl: no timestamps (ordering-only), so no chart; "
        "replays, check and timeline still apply\n"
    )


def test_a_replay_chosen_in_a_trace_without_timestamps(cli: Cli, trace: Path) -> None:
    """--trace naming the ordering-only one of two traces: 'no timestamps', exit 2."""
    _untimed(trace, trace.parent / "u.jsonl")
    result = cli(
        "plot", "t.jsonl", "u.jsonl", "--kind", "replay", "-o", "c.png", "--trace", "u.jsonl"
    )
    assert result.code == 2
    assert result.err == (
        "acp-trace: --trace u.jsonl: its replays are in ordering-only traces (no timestamps); "
        "the replay chart needs times\n"
    )


def test_a_trace_without_replays_says_there_are_none(cli: Cli, tmp_path: Path) -> None:
    """With no replay at all, the message says there is none to choose from."""
    b = TraceBuilder()
    b.request("session/prompt", {"sessionId": "s", "prompt": []})
    b.write(tmp_path / "p.jsonl")
    result = cli("plot", "p.jsonl", "--kind", "replay", "-o", "r.png", "--session", "s")
    assert result.err == "acp-trace: --session s: there is no replay to choose from\n"


def test_replays_of_a_trace_without_timestamps_says_so(cli: Cli, trace: Path) -> None:
    """The replays table of an ordering-only trace says why its times are `-`."""
    _untimed(trace, trace.parent / "u.jsonl")
    out = cli("replays", "u.jsonl").out
    assert "1 trace without timestamps (ordering-only): times show as -" in out
    assert "without timestamps" not in cli("replays", "t.jsonl").out
