"""The shared fault machinery: each fault bends a correct window so it breaks its one rule."""

from __future__ import annotations

import pytest

from acp_trace.demo.faults import bend, parse_faults
from acp_trace.demo.window import (
    LOAD,
    REPLAY,
    RESUME,
    Action,
    Crash,
    Pause,
    Reply,
    Step,
    Window,
    marker,
)
from acp_trace.jsonrpc import update_class

S = "s"


def h(kind: str = "user_message", sid: str = S) -> Step:
    return Step(sid, {"sessionUpdate": kind, "messageId": f"{sid}-{kind}"})


def live(kind: str = "session_info_update", sid: str = S) -> Step:
    return Step(sid, {"sessionUpdate": kind})


def state() -> Step:
    return Step(S, {"sessionUpdate": "state_update", "state": "idle"})


def announce(child: str) -> Step:
    return Step(S, {"sessionUpdate": "subagent_update", "sessionId": child})


def tokens(w: Window) -> list[str]:
    """The window as compact tokens, in the order it is sent."""
    out = []
    for a in w.sequence():
        if isinstance(a, Reply):
            out.append("reply" if a.error is None else f"error:{a.error[0]}")
        elif isinstance(a, Pause):
            out.append("pause")
        elif isinstance(a, Crash):
            out.append(f"crash:{a.code}")
        elif a.ask is not None:
            out.append(f"ask:{a.session}")
        else:
            kind = (a.update or {}).get("sessionUpdate")
            cls = update_class(kind)
            out.append(f"marker:{a.session}" if cls == "marker" else f"{cls}:{a.session}:{kind}")
    return out


def correct(marked: bool = True, kind: str = REPLAY, turns: int = 2) -> Window:
    replay: list[Action] = [h(k) for _ in range(turns) for k in ("user_message", "agent_message")]
    if marked:
        replay.append(marker(S))
    return Window(S, kind, replay, [state()] if kind != LOAD else [])


def bent(window: Window, *specs: str, pause: bool = False) -> list[str]:
    return tokens(bend(window, parse_faults(specs), (lambda: 0.5) if pause else None))


H2 = ["history:s:user_message", "history:s:agent_message"] * 2


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("marker-missing", [*H2, "live:s:state_update", "reply"]),
        ("marker-late", [*H2, "live:s:state_update", "reply", "marker:s"]),
        ("marker-duplicate", [*H2, "marker:s", "marker:s", "live:s:state_update", "reply"]),
        ("marker-with-rejection", ["marker:s", "error:-32602"]),
        ("error-after-marker", [*H2, "marker:s", "error:-32603"]),
        ("truncate:3", [*H2[:3], "error:-32603"]),
        (
            "live-before-marker",
            ["live:s:available_commands_update", *H2, "marker:s", "live:s:state_update", "reply"],
        ),
        (
            "request-before-marker",
            [*H2[:2], "ask:s", *H2[2:], "marker:s", "live:s:state_update", "reply"],
        ),
        ("state-snapshot-missing", [*H2, "marker:s", "reply"]),
        (
            "crash-mid-replay",
            [*H2[:2], "crash:3", *H2[2:], "marker:s", "live:s:state_update", "reply"],
        ),
        (
            "crash-mid-replay:1",
            [H2[0], "crash:3", *H2[1:], "marker:s", "live:s:state_update", "reply"],
        ),
        ("crash-mid-replay:0", ["crash:3", *H2, "marker:s", "live:s:state_update", "reply"]),
        ("crash-mid-replay:99", [*H2, "marker:s", "crash:3", "live:s:state_update", "reply"]),
    ],
)
def test_each_fault_on_a_correct_v2_replay(spec: str, expected: list[str]) -> None:
    """A correct replaying resume bent by one fault gives exactly the shape its rule names."""
    assert bent(correct(), spec) == expected


@pytest.mark.parametrize(
    "spec",
    ["marker-duplicate", "error-after-marker", "live-before-marker"],
)
def test_faults_that_need_a_marker_put_one_where_a_correct_agent_would(spec: str) -> None:
    """An unmarked replay gets a marker after its history, its live updates moved after it."""
    window = correct(marked=False)
    window.replay.insert(0, live())
    out = bent(window, spec)
    first_marker = out.index("marker:s")
    assert out[:first_marker] == [
        *(["live:s:available_commands_update"] if "live" in spec else []),
        *H2,
    ]
    after = [t for t in out[first_marker + 1 :] if t != "marker:s"]
    assert after[0] == "live:s:session_info_update"


@pytest.mark.parametrize("marked", [True, False])
def test_marker_with_rejection_keeps_only_the_marker(marked: bool) -> None:
    """marker-with-rejection sends S's marker and nothing else before -32602: no history (that
    would break updates-with-rejection too), no child and its marker, no live update; an
    unmarked replay gets the marker it needs."""
    window = correct(marked=marked)
    window.replay[1:1] = [announce("c"), h(sid="c"), marker("c")]
    window.replay.insert(0, live())
    assert bent(window, "marker-with-rejection", pause=True) == ["marker:s", "error:-32602"]


def test_marker_missing_and_late_on_an_unmarked_replay() -> None:
    """marker-missing leaves an unmarked replay as it is; marker-late adds one after the reply."""
    assert bent(correct(marked=False), "marker-missing") == [*H2, "live:s:state_update", "reply"]
    assert bent(correct(marked=False), "marker-late")[-2:] == ["reply", "marker:s"]


def test_child_faults_drop_child_markers_or_announce_late() -> None:
    """child-marker-missing drops the child's marker; child-marker-before-announce moves the
    subagent_update after the child's last step."""
    replay: list[Action] = [announce("c"), h(sid="c"), marker("c"), h(), marker(S)]
    window = Window(S, REPLAY, replay, [state()])
    assert bent(window, "child-marker-missing")[:3] == [
        "history:s:subagent_update",
        "history:c:user_message",
        "history:s:user_message",
    ]
    assert bent(window, "child-marker-before-announce")[:3] == [
        "history:c:user_message",
        "marker:c",
        "history:s:subagent_update",
    ]


def test_message_id_missing_strips_ids_without_touching_the_original() -> None:
    """Replayed messages lose messageId in the bent window only."""
    window = correct()
    out = bend(window, parse_faults(["message-id-missing"]))
    assert all("messageId" not in (a.update or {}) for a in out.replay if isinstance(a, Step))
    assert all("messageId" in (a.update or {}) for a in window.replay[:4] if isinstance(a, Step))


def test_load_updates_after_response_answers_after_the_first_update() -> None:
    """A v1 load: the first update, the reply, then the rest; no pause."""
    out = bent(correct(marked=False, kind=LOAD), "load-updates-after-response", pause=True)
    assert out == [H2[0], "reply", *H2[1:]]


@pytest.mark.parametrize("kind", [LOAD, RESUME])
def test_replay_only_faults_leave_other_windows_alone(kind: str) -> None:
    """Marker faults and error-after-marker touch only v2 replaying resumes."""
    window = correct(marked=False, kind=kind)
    for spec in ("marker-late", "marker-duplicate", "error-after-marker", "live-before-marker"):
        assert bent(window, spec) == tokens(window)


def test_the_pause_goes_before_the_tail_unless_the_reply_is_an_injected_error() -> None:
    """--gap waits after the replay (before the snapshot); not when the reply became an error."""
    assert bent(correct(), pause=True) == [*H2, "marker:s", "pause", "live:s:state_update", "reply"]
    assert "pause" not in bent(correct(), "error-after-marker", pause=True)
    assert "pause" not in bent(correct(), "truncate:2", pause=True)


def test_an_empty_replay_does_not_crash_by_default() -> None:
    """crash-mid-replay halves the updates: with none there is no crash, with :N one at the end."""
    empty = Window(S, RESUME, [], [state()])
    assert bent(empty, "crash-mid-replay") == ["live:s:state_update", "reply"]
    assert bent(empty, "crash-mid-replay:2") == ["crash:3", "live:s:state_update", "reply"]


@pytest.mark.parametrize(
    ("specs", "mock", "message"),
    [
        (["marker-sideways"], False, "unknown fault 'marker-sideways'; known: marker-missing"),
        (["non-json-line"], True, "unknown fault 'non-json-line'"),
        (["truncate"], False, "expected truncate:N"),
        (["truncate:x"], False, "expected truncate:N, N a whole number"),
        (["marker-late:2"], False, "marker-late takes no argument"),
        (["crash-mid-replay:-1"], False, "expected crash-mid-replay[:N], N a whole number"),
    ],
)
def test_parse_faults_refuses_what_it_does_not_know(
    specs: list[str], mock: bool, message: str
) -> None:
    """Unknown names, faults the mock cannot apply and bad arguments raise ValueError."""
    with pytest.raises(ValueError) as err:
        parse_faults(specs, mock=mock)
    assert message in str(err.value)


def test_parse_faults_reads_arguments() -> None:
    """`crash-mid-replay:4` and `truncate:7` keep their numbers; a plain name has none."""
    faults = parse_faults(["crash-mid-replay:4", "truncate:7", "marker-late"])
    assert faults.names == {"crash-mid-replay", "truncate", "marker-late"}
    assert (faults.crash_after, faults.truncate_after) == (4, 7)
    assert parse_faults(["crash-mid-replay"]).crash_after is None
