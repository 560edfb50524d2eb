"""The round trip: the mock of a recording, recorded through the tap, analyzes like the original.

Each sample trace is served by `acp-trace mock` to the demo client it was recorded with,
through `acp-trace record`; the new trace gives the same replay outcomes, counts and findings.
At --speed 1 no timing measured from the request comes out earlier than recorded (the mock
sends nothing before its time, and the tap stamps a request before the mock can read it);
how much later is measured by benchmarks/bench_mock.py, never asserted here. Each mock fault
gives the rule it is named after.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import acp_trace
from acp_trace.demo.client import ClientOptions, ClientResult, run_client
from testpaths import SAMPLES

REAL = "0198c0de-0000-7000-8000-000000000200"
DEMO = ("--protocol", "2", "--session", "sess_demo")
# The correct demo samples start with session/new and a prompt, then replay that session.
PROMPT = ("--prompt", "Summarize the replayed history in one line.")
# The demo-client options each sample was recorded with (sample_traces/README.md, Commands).
CLIENTS: dict[str, tuple[str, ...]] = {
    "codex-acp-rs-v1-load": ("--protocol", "1", "--session", REAL),
    "codex-acp-ts-v1-load": ("--protocol", "1", "--session", REAL),
    "codex-acp-ts-v2-resume": ("--protocol", "2", "--session", REAL),
    "gemini-cli-v1-load": ("--protocol", "1", "--session", REAL),
    "claude-agent-acp-v2-resume": ("--protocol", "2", "--session", REAL),
    "demo-v1-load": ("--protocol", "1", *PROMPT),
    "demo-v2-complete": ("--protocol", "2", *PROMPT),
    "demo-v2-children": ("--protocol", "2", *PROMPT),
    "demo-v2-cold-start": ("--protocol", "2", *PROMPT, "--resumes", "5"),
    "demo-fault-marker-unexpected": ("--protocol", "2", "--cursor", "none"),
    "demo-fault-replay-without-cursor": (*DEMO, "--cursor", "none"),
    "demo-fault-load-updates-after-response": ("--protocol", "1", "--session", "sess_demo"),
}
SAMPLE_NAMES = sorted(p.stem for p in SAMPLES.glob("*.jsonl"))
SAME = ["session", "request_id", "method", "protocol", "agent", "agent_version", "outcome"]
COUNTS = ["history_updates", "history_bytes", "live_updates"]
FROM_REQUEST = ["first_update_ms", "marker_ms", "last_history_ms", "state_ms", "response_ms"]


def client_options(args: tuple[str, ...]) -> dict[str, Any]:
    """demo-client's command-line options as ClientOptions fields."""
    pairs = dict(zip(args[::2], args[1::2], strict=True))
    out: dict[str, Any] = {"protocol": int(pairs.get("--protocol", "2"))}
    out["session"] = pairs.get("--session")
    out["prompt"] = pairs.get("--prompt")
    out["resumes"] = int(pairs.get("--resumes", "1"))
    out["cursor"] = pairs.get("--cursor", "start")
    return out


def serve(
    trace: Path, out: Path, client: tuple[str, ...] = DEMO, *mock_args: str, speed: str = "0"
) -> ClientResult:
    """Record the demo client talking to `acp-trace mock TRACE` through the tap, into `out`."""
    acp = (sys.executable, "-m", "acp_trace")
    mock = (*acp, "mock", "--speed", speed, *mock_args, str(trace))
    opts = ClientOptions(
        command=(*acp, "record", "-o", str(out), "--", *mock),
        cwd="/home/user/project",
        timeout=60,
        grace=10,
        **client_options(client),
    )
    return run_client(opts)


def rules(path: Path) -> set[str]:
    return set(acp_trace.check([path])["rule"].to_list())


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_sample_trace_comes_back_with_its_outcomes_counts_and_findings(
    tmp_path: Path, name: str
) -> None:
    """Outcomes, counts (bytes included) and the rules found are those of the original."""
    original = SAMPLES / f"{name}.jsonl"
    again = tmp_path / "again.jsonl"
    serve(original, again, CLIENTS.get(name, DEMO))
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
    serve(original, again, CLIENTS.get(name, DEMO), speed=speed)
    before = acp_trace.replays([original]).select(FROM_REQUEST).to_dicts()
    after = acp_trace.replays([again]).select(FROM_REQUEST).to_dicts()
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        for field in FROM_REQUEST:
            if old[field] is None:
                assert new[field] is None, field
            else:
                assert new[field] >= old[field] / float(speed) - 0.001, (field, old, new)


# fault, sample, the replays row of the session (outcome, history_updates), the new rules
FAULT_CASES = [
    ("marker-missing", "demo-v2-complete", ("unmarked", 402), {"marker-missing"}),
    ("marker-late", "demo-v2-complete", ("unmarked", 402), {"marker-late", "marker-missing"}),
    ("marker-late", "codex-acp-ts-v2-resume", ("unmarked", 800), {"marker-late"}),
    ("marker-duplicate", "claude-agent-acp-v2-resume", ("complete", 800), {"marker-duplicate"}),
    (
        "marker-with-rejection",
        "demo-v2-complete",
        ("complete_failed", 0),  # the marker alone: history would be updates-with-rejection
        {"marker-with-rejection"},
    ),
    ("live-before-marker", "claude-agent-acp-v2-resume", ("complete", 800), {"live-before-marker"}),
    ("live-before-marker", "codex-acp-ts-v2-resume", ("complete", 800), {"live-before-marker"}),
    ("request-before-marker", "demo-v2-complete", ("complete", 402), {"request-before-marker"}),
    ("child-marker-missing", "demo-v2-children", ("complete", 104), {"child-marker-missing"}),
    (
        "child-marker-before-announce",
        "demo-v2-children",
        ("complete", 104),
        {"child-marker-before-announce"},
    ),
    (
        "state-snapshot-missing",
        "codex-acp-ts-v2-resume",
        ("unmarked", 800),
        {"state-snapshot-missing"},
    ),
    (  # v2 requires messageId: the schema says so too
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
    ("crash-mid-replay", "demo-v2-complete", ("truncated", 201), {"unanswered-request"}),
    ("crash-mid-replay:5", "codex-acp-rs-v1-load", ("v1_failed", 5), {"unanswered-request"}),
    ("error-after-marker", "claude-agent-acp-v2-resume", ("complete_failed", 800), set()),
    ("truncate:7", "demo-v2-complete", ("truncated", 7), set()),
    ("truncate:3", "gemini-cli-v1-load", ("v1_failed", 1), set()),
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
    serve(original, again, CLIENTS.get(name, DEMO), "--fault", fault)
    table = acp_trace.replays([again]).filter(pl.col("parent_session").is_null())
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
    serve(SAMPLES / "demo-v2-complete.jsonl", again, CLIENTS["demo-v2-complete"], "--gap", "0.4")
    row = acp_trace.replays([again]).to_dicts()[0]
    assert row["outcome"] == "complete" and row["response_ms"] >= 400
    assert row["marker_ms"] < row["response_ms"]
