"""The round trip: the mock of a recording, recorded through the tap, analyzes like the original.

Each sample trace is served by `acp-trace mock` to the demo client it was recorded with,
through `acp-trace record`; the new trace gives the same replay outcomes, counts and findings.
At --speed 1 no timing measured from the request comes out earlier than recorded (the mock
sends nothing before its time, and the tap stamps a request before the mock can read it);
how much later is measured by benchmarks/bench_mock.py, never asserted here. Each mock fault
gives the rule it is named after.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import acp_trace
from acp_trace.demo.client import ClientOptions, ClientResult, run_client
from testpaths import SAMPLES


def recorded_with() -> dict[str, tuple[str, ...]]:
    """The demo-client options each sample was recorded with, read from the Commands of
    sample_traces/README.md (so a remade sample is served to the client it was made with)."""
    out: dict[str, tuple[str, ...]] = {}
    text = (SAMPLES / "README.md").read_text()
    for name, command in re.findall(r"^- `([\w.-]+)`: `(.+)`$", text, flags=re.M):
        words = shlex.split(command)
        start = words.index("demo-client") + 1
        out[name] = tuple(words[start : words.index("--", start)])
    return out


CLIENTS = recorded_with()
DEMO = CLIENTS["demo-v2-complete"]
SAMPLE_NAMES = sorted(p.stem for p in SAMPLES.glob("*.jsonl"))
SAME = ["session", "request_id", "method", "protocol", "agent", "agent_version", "outcome"]
# Not `live_updates`: at --speed 0 an update the mock sends right after a response races the
# client's next request (the client sends it as soon as it has the response), so the update
# can fall in the next request's window, as it can with a real agent on a busy machine.
COUNTS = ["history_updates", "history_bytes"]
FROM_REQUEST = ["first_update_ms", "marker_ms", "last_history_ms", "state_ms", "response_ms"]


def client_options(args: tuple[str, ...]) -> dict[str, Any]:
    """demo-client's command-line options as ClientOptions fields."""
    flags = {"--air"}  # the options that take no value
    valued = [a for a in args if a not in flags]
    pairs = dict(zip(valued[::2], valued[1::2], strict=True))  # the others take one each
    # (--prompt repeats: all of them, in order)
    out: dict[str, Any] = {"protocol": int(pairs.get("--protocol", "2")), "air": "--air" in args}
    out["session"] = pairs.get("--session")
    out["resumes"] = int(pairs.get("--resumes", "1"))
    out["cursor"] = pairs.get("--cursor", "start")
    out["prompts"] = tuple(
        v for k, v in zip(valued[::2], valued[1::2], strict=True) if k == "--prompt"
    )
    out["cwd"] = pairs.get("--cwd", "/home/user/project")
    return out


def serve(
    trace: Path, out: Path, client: tuple[str, ...] = DEMO, *mock_args: str, speed: str = "0"
) -> ClientResult:
    """Record the demo client talking to `acp-trace mock TRACE` through the tap, into `out`."""
    acp = (sys.executable, "-m", "acp_trace")
    mock = (*acp, "mock", "--speed", speed, *mock_args, str(trace))
    opts = ClientOptions(
        command=(*acp, "record", "-o", str(out), "--", *mock),
        timeout=60,
        grace=10,
        **client_options(client),
    )
    return run_client(opts)


# Rules of time alone (a silence, a pause in a replay): --speed 0 serves without pauses.
TIMED = {"silence-past-client-deadline", "replay-outlasts-quiet-window"}


def rules(path: Path) -> set[str]:
    """The rules `check` finds, but those of time alone."""
    return set(acp_trace.check([path])["rule"].to_list()) - TIMED


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_sample_trace_comes_back_with_its_outcomes_counts_and_findings(
    tmp_path: Path, name: str
) -> None:
    """Outcomes, counts (bytes included) and the rules found are those of the original (but
    those of time alone: served at once, the recording's silences are gone)."""
    original = SAMPLES / f"{name}.jsonl"
    again = tmp_path / "again.jsonl"
    serve(original, again, CLIENTS[name])
    columns = [*SAME, *COUNTS]
    assert acp_trace.replays([again]).select(columns).to_dicts() == (
        acp_trace.replays([original]).select(columns).to_dicts()
    )
    assert rules(again) == rules(original)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "speed"),
    [
        ("claude-agent-acp-v2-resume", "1"),
        ("gemini-cli-v1-load", "1"),
        ("demo-v2-cold-start", "1"),
        ("codex-acp-ts-v2-resume", "2"),
    ],
)
def test_paced_timings_are_never_earlier_than_recorded(
    tmp_path: Path, name: str, speed: str
) -> None:
    """At --speed X every timing from the request is at least the recorded one divided by X."""
    original = SAMPLES / f"{name}.jsonl"
    again = tmp_path / "again.jsonl"
    serve(original, again, CLIENTS[name], speed=speed)
    before = acp_trace.replays([original]).select(FROM_REQUEST).to_dicts()
    after = acp_trace.replays([again]).select(FROM_REQUEST).to_dicts()
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        for field in FROM_REQUEST:
            if old[field] is None:
                assert new[field] is None, field
            else:
                assert new[field] >= old[field] / float(speed) - 0.001, (field, old, new)


# fault, sample, the replays row of the session (outcome, history_updates: a number, or ALL
# of the original's, or HALF of them), the new rules
ALL, HALF = -1, -2
FAULT_CASES = [
    ("marker-missing", "demo-v2-complete", ("unmarked", ALL), {"marker-missing"}),
    ("marker-late", "demo-v2-complete", ("unmarked", ALL), {"marker-late", "marker-missing"}),
    ("marker-late", "codex-acp-ts-v2-resume", ("unmarked", 800), {"marker-late"}),
    ("marker-duplicate", "claude-agent-acp-v2-resume", ("complete", 800), {"marker-duplicate"}),
    (
        "marker-with-rejection",
        "demo-v2-complete",
        ("complete_failed", 0),
        # the marker alone, then -32602: the prompt's turn (the source) is not replayed
        {"marker-with-rejection", "replay-missing-messages"},
    ),
    ("live-before-marker", "claude-agent-acp-v2-resume", ("complete", 800), {"live-before-marker"}),
    ("live-before-marker", "codex-acp-ts-v2-resume", ("complete", 800), {"live-before-marker"}),
    ("request-before-marker", "demo-v2-complete", ("complete", ALL), {"request-before-marker"}),
    ("child-marker-missing", "demo-v2-children", ("complete", ALL), {"child-marker-missing"}),
    (
        "child-marker-before-announce",
        "demo-v2-children",
        ("complete", ALL),
        {"child-marker-before-announce"},
    ),
    (
        "state-snapshot-missing",
        "codex-acp-ts-v2-resume",
        ("unmarked", 800),
        {"state-snapshot-missing"},
    ),
    # the v2 schema requires messageId too: schema-invalid comes with it
    (
        "message-id-missing",
        "claude-agent-acp-v2-resume",
        ("unmarked", 800),
        {"message-id-missing", "schema-invalid"},
    ),
    (
        "load-updates-after-response",
        "codex-acp-rs-v1-load",
        ("v1_loaded", 1),
        {"load-updates-after-response"},
    ),
    # a replay cut before the prompt's turn at its end misses the messages of its source
    (
        "crash-mid-replay",
        "demo-v2-complete",
        ("truncated", HALF),
        {"unanswered-request", "replay-missing-messages"},
    ),
    ("crash-mid-replay:5", "codex-acp-rs-v1-load", ("v1_failed", 5), {"unanswered-request"}),
    ("error-after-marker", "claude-agent-acp-v2-resume", ("complete_failed", 800), set()),
    ("truncate:7", "demo-v2-complete", ("truncated", 7), {"replay-missing-messages"}),
    ("truncate:3", "gemini-cli-v1-load", ("v1_failed", 1), set()),
    # the fidelity faults, on a new session's replay of its two turns (4 updates, a complete
    # source: extra messages count); the session from before of demo-v2-complete has a prompt
    (
        "replay-missing-messages",
        "demo-v2-new-session",
        ("complete", 3),
        {"replay-missing-messages"},
    ),
    ("replay-missing-messages", "demo-v1-load", ("v1_loaded", 401), {"replay-missing-messages"}),
    ("replay-id-unstable", "demo-v2-new-session", ("complete", ALL), {"replay-id-unstable"}),
    ("replay-id-unstable", "demo-v2-complete", ("complete", ALL), {"replay-id-unstable"}),
    (
        "replay-prompt-id-changed",
        "demo-v2-new-session",
        ("complete", ALL),
        {"replay-prompt-id-changed"},
    ),
    (
        "replay-duplicate-message",
        "demo-v2-new-session",
        ("complete", 5),
        {"replay-duplicate-message"},
    ),
    (
        "replay-chunk-before-message",
        "demo-v2-new-session",
        ("complete", 5),
        {"replay-chunk-before-message"},
    ),
    (
        "replay-truncated-content",
        "demo-v2-complete",
        ("complete", ALL),
        {"replay-truncated-content"},
    ),
    ("replay-reordered", "demo-v2-new-session", ("complete", ALL), {"replay-reordered"}),
    ("replay-reordered", "demo-v1-load", ("v1_loaded", ALL), {"replay-reordered"}),
    ("replay-extra-messages", "demo-v2-new-session", ("complete", 5), {"replay-extra-messages"}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "name", "row", "new_rules"), FAULT_CASES)
def test_each_fault_gives_the_rule_it_names(
    tmp_path: Path, fault: str, name: str, row: tuple[str, int], new_rules: set[str]
) -> None:
    """The mock with --fault F on a recording: the outcome it means and the rule named F
    (with the findings that necessarily come with it), nothing else new."""
    original = SAMPLES / f"{name}.jsonl"
    again = tmp_path / "again.jsonl"
    serve(original, again, CLIENTS[name], "--fault", fault)
    table = acp_trace.replays([again]).filter(pl.col("parent_session").is_null())
    if row[1] < 0:
        first = acp_trace.replays([original]).filter(pl.col("parent_session").is_null())
        count = first["history_updates"][0]
        row = (row[0], count if row[1] == ALL else count // 2)
    assert table.select("outcome", "history_updates").rows() == [row]
    assert rules(again) - rules(original) == new_rules
    if fault.startswith("crash-mid-replay"):
        exits = acp_trace.read_trace(again).filter(pl.col("event") == "exit")["text"].to_list()
        assert '"code":3' in exits[0]


@pytest.mark.slow
def test_gap_stretches_the_wait_before_the_response(tmp_path: Path) -> None:
    """--gap 0.4 at --speed 0: the response comes at least 0.4 s after the request, the marker
    before that wait."""
    again = tmp_path / "again.jsonl"
    serve(SAMPLES / "demo-v2-complete.jsonl", again, DEMO, "--gap", "0.4")
    row = acp_trace.replays([again]).to_dicts()[0]
    assert row["outcome"] == "complete" and row["response_ms"] >= 400
    assert row["marker_ms"] < row["response_ms"]
