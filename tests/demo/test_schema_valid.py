"""The demo agent is the reference agent: recorded through the tap, its correct traffic in v1
and v2 matches the official ACP JSON Schema, and each fault breaks only the rule it names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

import acp_trace
from acp_trace.analysis.schema.catalog import schema
from acp_trace.demo.agent import FAULTS
from acp_trace.demo.client import ClientOptions, run_client
from acp_trace.demo.fidelity_faults import FIDELITY_FAULTS
from acp_trace.demo.run import acp_trace_command
from acp_trace.demo.window import live_step, permission_params

# name -> (protocol, agent options, client options): every correct thing the agent does
CORRECT: dict[str, tuple[int, tuple[str, ...], dict[str, Any]]] = {
    "v1-load": (1, ("--turns", "3"), {"session": "sess_demo"}),
    "v1-prompt-load": (1, ("--turns", "2"), {"prompts": ("hello there",)}),
    "v1-children": (1, ("--turns", "2", "--children", "2"), {"session": "sess_demo"}),
    "v1-unknown-session": (1, (), {"session": "nobody"}),
    "v2-resume": (2, ("--turns", "3"), {"session": "sess_demo"}),
    "v2-prompt-resume": (2, ("--turns", "2"), {"prompts": ("hello there",), "resumes": 2}),
    "v2-children": (2, ("--turns", "2", "--children", "2"), {"prompts": ("hi",)}),
    "v2-no-cursor": (2, ("--turns", "2"), {"session": "sess_demo", "cursor": "none"}),
    "v2-cursor-rejected": (2, ("--turns", "2"), {"session": "sess_demo", "cursor": "_vendor"}),
    "v2-unknown-session": (2, (), {"session": "nobody"}),
    "v2-gap": (2, ("--turns", "1", "--gap", "0.05"), {"session": "sess_demo", "resumes": 2}),
}
# fault -> the rules its trace breaks: the one it names and those that necessarily come with
# it (a late marker is also a missing one; v2 requires messageId, so the schema says so too)
BREAKS: dict[str, set[str]] = {
    "marker-missing": {"marker-missing"},
    "marker-late": {"marker-late", "marker-missing"},
    "marker-duplicate": {"marker-duplicate"},
    "marker-unexpected": {"marker-unexpected"},
    "marker-with-rejection": {"marker-with-rejection"},
    "live-before-marker": {"live-before-marker"},
    "request-before-marker": {"request-before-marker"},
    "child-marker-missing": {"child-marker-missing"},
    "child-marker-before-announce": {"child-marker-before-announce"},
    "state-snapshot-missing": {"state-snapshot-missing"},
    "message-id-missing": {"message-id-missing", "schema-invalid"},
    "replay-without-cursor": {"replay-without-cursor"},
    "load-updates-after-response": {"load-updates-after-response"},
    "crash-mid-replay": {"unanswered-request"},  # no rule of its own: the response never comes
    "error-after-marker": set(),  # an error after a complete replay breaks no rule
    "truncate": set(),  # a cut replay answered with an error: `truncated`, no rule
    "non-json-line": {"non-json-line"},
    "orphan-response": {"orphan-response"},
    # the fidelity faults, on a new session's replay of its two turns (a complete source)
    **{fault: {fault} for fault in FIDELITY_FAULTS},
}
V1_FAULTS = {"load-updates-after-response"}
NO_CURSOR = {"marker-unexpected", "replay-without-cursor"}


def record(out: Path, name: str, protocol: int, agent: tuple[str, ...], **client: Any) -> Path:
    """One conversation of the demo client and agent, recorded through `acp-trace record`."""
    trace = out / f"{name}.jsonl"
    # ids of its own: the traces are analyzed together, where equal ids are one session
    sid = f"sess_{name}"
    if client.get("session") == "sess_demo":
        client["session"] = sid
    own = ("--session", sid, "--new-session-prefix", f"{sid}_new_")
    demo_agent = acp_trace_command("demo-agent", *own, *agent)
    tap = acp_trace_command("record", "-o", str(trace), "--", *demo_agent)
    opts = ClientOptions(command=tuple(tap), protocol=protocol, timeout=30, **client)
    run_client(opts)
    assert trace.exists(), name
    return trace


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[acp_trace.Analysis, dict[str, str]]:
    """Every correct scenario and every fault (v2, or v1 where the fault is a v1 one), recorded
    and analyzed once; the traces by name."""
    out = tmp_path_factory.mktemp("schema")
    traces = {
        name: record(out, name, protocol, agent, **client)
        for name, (protocol, agent, client) in CORRECT.items()
    }
    for fault in FAULTS:
        spec = "truncate:2" if fault == "truncate" else fault
        client: dict[str, Any] = {"session": "sess_demo"}
        if fault in NO_CURSOR:
            client["cursor"] = "none"
        if fault in FIDELITY_FAULTS:  # session/new and two turns: the replay's source
            client = {"prompts": ("Summarize it.", "Name the files.")}
        protocol = 1 if fault in V1_FAULTS else 2
        agent = ("--turns", "4", "--fault", spec)
        traces[f"fault-{fault}"] = record(out, f"fault-{fault}", protocol, agent, **client)
    return acp_trace.analyze(list(traces.values())), {k: str(v) for k, v in traces.items()}


def rules_of(a: acp_trace.Analysis, trace: str) -> set[str]:
    return set(a.findings().filter(pl.col("trace") == trace)["rule"].to_list())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_traffic_is_schema_valid_and_breaks_no_rule(
    recorded: tuple[acp_trace.Analysis, dict[str, str]], name: str
) -> None:
    """Each correct scenario (v1 and v2 loads and resumes, prompts, children, no cursor, a
    rejected cursor, an unknown session, gaps) has no schema-invalid finding, nor any other."""
    a, traces = recorded
    schema_findings = a.findings().filter(
        pl.col("trace") == traces[name], pl.col("rule") == "schema-invalid"
    )
    assert schema_findings["message"].to_list() == []
    assert rules_of(a, traces[name]) == set()


@pytest.mark.slow
def test_the_correct_scenarios_validate_something(
    recorded: tuple[acp_trace.Analysis, dict[str, str]],
) -> None:
    """The schema pass did look at them: prompts, updates, resumes and errors of both versions
    have types the schema names."""
    a, traces = recorded
    tl = a.timeline.filter(pl.col("trace").is_in([traces[n] for n in CORRECT]))
    methods = set(tl["method"].drop_nulls().to_list())
    assert {"initialize", "session/new", "session/prompt", "session/resume"} <= methods
    assert {"session/load", "session/update"} <= methods
    assert tl.filter(pl.col("kind") == "error").height >= 3  # unknown sessions, the cursor


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_breaks_only_its_rule(
    recorded: tuple[acp_trace.Analysis, dict[str, str]], fault: str
) -> None:
    """Every fault's trace breaks the rule it names (and what necessarily comes with it);
    only message-id-missing, whose missing field the v2 schema requires, is schema-invalid."""
    a, traces = recorded
    assert rules_of(a, traces[f"fault-{fault}"]) == BREAKS[fault]


def test_every_fault_has_its_expected_rules() -> None:
    """The table above names every fault the agent knows (a new fault needs its line)."""
    assert set(BREAKS) == set(FAULTS)


@pytest.mark.parametrize("protocol", [1, 2])
def test_shapes_the_faults_add_match_the_schema(protocol: int) -> None:
    """The update live-before-marker adds and the permission request request-before-marker
    sends (also sent by `acp-trace mock`, v1 and v2) match both versions' schemas."""
    s = schema(protocol)
    update = {"sessionId": "s", "update": live_step("s").update}
    notification = s.type_for("notification", "agent", "session/update")
    request = s.type_for("request", "agent", "session/request_permission")
    assert notification is not None and request is not None
    assert s.validator(notification).is_valid(update)
    assert s.validator(request).is_valid(permission_params("s", protocol))
