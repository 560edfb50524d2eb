"""The native path of the fidelity pass against the Python path: the same fields and the same
differences, in the same order, on generated traces (hostile shapes among them) and on every
sample trace; and the native path is the one taken for the shapes real agents send."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import acp_trace
from acp_trace.analysis.replay_fidelity import replay_fidelity
from acp_trace.fidelity import ReplayFidelity
from testpaths import ROOT
from tracebuilder import TraceBuilder

SAMPLES = sorted((ROOT / "sample_traces").glob("*.jsonl"))
SESSIONS = ("s1", "s2")
IDS: list[Any] = ["m1", "m2", "m3", "m\u00e9", 7, None, {"o": 1}, 18446744073709551617, 1.5]
TEXTS = ["", "hello", "a\x00b\x1b[31m\n", "\u202e\u00e9\U0001f600", "x" * 90, "\ud800"]
MESSAGE_KINDS = ("user_message", "agent_message", "agent_thought", "session_message")


def both(a: acp_trace.Analysis) -> tuple[list[ReplayFidelity], list[ReplayFidelity], int]:
    """The pass through both paths, and how many replays the native path took."""
    compare = sys.modules["acp_trace.fidelity.compare"]
    taken: list[int] = []
    original = compare.compare_native

    def counting(*args: Any, **kwargs: Any) -> Any:
        done = original(*args, **kwargs)
        taken.append(len(done))
        return done

    compare.compare_native = counting
    try:
        args = (a.timeline, a.facts, a.turn_facts, a.headers)
        native = replay_fidelity(*args)
    finally:
        compare.compare_native = original
    return replay_fidelity(*args, native=False), native, sum(taken)


def same(a: acp_trace.Analysis) -> int:
    python, native, taken = both(a)
    assert len(python) == len(native)
    for p, n in zip(python, native, strict=True):
        for name in p.__dataclass_fields__:
            assert getattr(p, name) == getattr(n, name), name
    return taken


def _block(draw: Any) -> Any:
    text = draw(st.sampled_from(TEXTS))
    return draw(
        st.sampled_from(
            [
                {"type": "text", "text": text},
                {"type": "text", "text": text, "annotations": {"a": [1]}},
                {"type": "image", "data": "AA==", "mimeType": "image/png"},
                {"type": "text"},
                text,
                7,
            ]
        )
    )


def _content(draw: Any, weird: bool) -> Any:
    if not weird:
        return draw(st.sampled_from([{"type": "text", "text": t} for t in TEXTS[:5]]))
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return None
    if choice == 1:
        return _block(draw)
    return [_block(draw) for _ in range(draw(st.integers(0, 3)))]


def _update(draw: Any) -> dict[str, Any]:
    """One fidelity update: mostly the shapes real agents send, now and then a hostile one."""
    weird = draw(st.integers(0, 5)) == 0
    ident = draw(st.sampled_from(IDS if weird else IDS[:4]))
    if draw(st.integers(0, 3)) == 0:
        kind = draw(st.sampled_from(["tool_call", "tool_call_update"]))
        update: dict[str, Any] = {"sessionUpdate": kind}
        if ident is not None or not weird:
            update["toolCallId"] = ident if weird else f"t{ident}"
        status = draw(st.sampled_from(["pending", "completed", None, 3, "absent"]))
        if status != "absent" and (weird or isinstance(status, str)):
            update["status"] = status
        items = [
            {"type": "content", "content": {"type": "text", "text": draw(st.sampled_from(TEXTS))}}
            for _ in range(draw(st.integers(0, 2)))
        ]
        choice = draw(st.integers(0, 4 if weird else 2))
        if choice == 1:
            update["content"] = items
        elif choice == 3:
            update["content"] = draw(st.sampled_from([None, 5, {"type": "diff"}, [_block(draw)]]))
        elif choice == 4:
            update["rawOutput"] = draw(st.sampled_from([None, {"out": "x"}, 1e300]))
        return update
    kind = draw(st.sampled_from(MESSAGE_KINDS)) + draw(st.sampled_from(["", "_chunk"]))
    update = {"sessionUpdate": kind, "content": _content(draw, weird)}
    if ident is not None or not weird:
        update["messageId"] = ident if ident is not None else "m0"
    return update


def _write_update(b: TraceBuilder, session: str, update: dict[str, Any] | str, plain: bool) -> None:
    """orjson's compact form, or the stdlib's (spaces, escapes, lone surrogates, big ints); an
    update given as text is written as it is (escaped keys, a key twice)."""
    msg = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session}}
    b.seq += 1
    b.t_ns += 1_000_000
    if isinstance(update, str):
        text = json.dumps(msg)[:-2] + ', "update": ' + update + "}}"
        b.lines.append(f'{{"seq":{b.seq},"t_ns":{b.t_ns},"src":"agent","msg":{text}}}'.encode())
        return
    msg["params"]["update"] = update
    line = {"seq": b.seq, "t_ns": b.t_ns, "src": "agent", "msg": msg}
    try:
        if plain:
            b.send("agent", msg)
            return
    except TypeError:  # what orjson cannot write
        pass
    b.lines.append(json.dumps(line).encode())


@st.composite
def traces(draw: Any) -> TraceBuilder:
    """A v2 (now and then v1) recording: sessions made, prompted and replayed, in any order."""
    v1 = draw(st.integers(0, 6)) == 0
    b = TraceBuilder(protocol=1 if v1 else 2)
    for _ in range(draw(st.integers(1, 7))):
        session = draw(st.sampled_from(SESSIONS))
        step = draw(st.sampled_from(["new", "prompt", "prompt", "replay", "replay"]))
        if step == "new":
            rid = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
            b.response(rid, {"sessionId": session})
            continue
        if step == "prompt":
            text = draw(st.sampled_from(TEXTS[:5]))
            rid = b.request(
                "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
            )
        else:
            rid = b.load(session) if v1 else b.resume(session)
        for _ in range(draw(st.integers(0, 8))):
            between = draw(st.integers(0, 11))  # what else comes between updates (v1 runs)
            if between == 0:
                b.state(session, "running")  # an agent record: it ends a run of chunks
            elif between == 1:
                b.notify("session/cancel", {"sessionId": session}, src="client")  # it does not
            other = between == 2
            _write_update(b, "s3" if other else session, _update(draw), draw(st.booleans()))
        if step == "replay" and not v1 and draw(st.booleans()):
            b.marker(session)
        if draw(st.integers(0, 5)) == 0:
            b.error(rid, -32000)
        elif step == "prompt":
            mid = draw(st.sampled_from(["m1", "m2", 7, None]))
            b.response(rid, {"stopReason": "end_turn", **({"messageId": mid} if mid else {})})
        else:
            b.response(rid, {})
    return b


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(trace=traces())
def test_native_equals_python_on_generated_traces(tmp_path: Path, trace: TraceBuilder) -> None:
    same(acp_trace.analyze(trace.write(tmp_path / "t.jsonl")))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_native_equals_python_on_each_sample(path: Path) -> None:
    same(acp_trace.analyze(path))


def test_native_equals_python_on_all_samples_together() -> None:
    """Sources looked for across recordings; the v2 samples take the native path."""
    assert same(acp_trace.analyze(SAMPLES)) > 0


def _text(t: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": t}]


def _turn_then_replay(updates: list[dict[str, Any]], *, plain: bool = True) -> TraceBuilder:
    """A live turn (its prompt answered with messageId u1, an agent message a1), then a marked
    replay carrying `updates`."""
    b = TraceBuilder()
    rid = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(rid, {"sessionId": "s1"})
    rid = b.request("session/prompt", {"sessionId": "s1", "prompt": _text("question")})
    b.update("s1", "agent_message_chunk", messageId="a1", content={"type": "text", "text": "ok"})
    b.update("s1", "tool_call", toolCallId="t1", status="pending")
    b.response(rid, {"stopReason": "end_turn", "messageId": "u1"})
    rid = b.resume("s1")
    for update in updates:
        _write_update(b, "s1", update, plain)
    b.marker("s1")
    b.response(rid, {})
    return b


FAITHFUL = [
    {"sessionUpdate": "user_message", "messageId": "u1", "content": _text("question")},
    {"sessionUpdate": "agent_message", "messageId": "a1", "content": _text("ok")},
    {"sessionUpdate": "tool_call", "toolCallId": "t1", "status": "pending"},
]
HOSTILE: dict[str, tuple[list[Any], bool, bool]] = {
    # name: (the replay's updates, written by orjson, the native path takes it)
    "faithful": (FAITHFUL, True, True),
    "faithful, the stdlib's spaces and escapes": (FAITHFUL, False, True),
    "new ids": (
        [{**u, "messageId": "x" + str(u.get("messageId"))} for u in FAITHFUL[:2]],
        True,
        True,
    ),
    "control characters and bidi in text": (
        [
            {
                "sessionUpdate": "agent_message",
                "messageId": "a1",
                "content": _text("\x00\x1b[2J\u202e"),
            }
        ],
        True,
        True,
    ),
    "an id of the wrong type": (
        [{"sessionUpdate": "agent_message", "messageId": {"an": "object"}, "content": _text("ok")}],
        True,
        True,
    ),
    "an integer id": (
        [{"sessionUpdate": "agent_message", "messageId": 18446744073709551617, "content": []}],
        False,
        True,
    ),
    "a chunk without an id": (
        [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}],
        True,
        True,
    ),
    "a tool call update for an unknown id": (
        [{"sessionUpdate": "tool_call_update", "toolCallId": "nope", "status": "failed"}],
        True,
        True,
    ),
    "a tool call update with rawOutput": (
        [
            FAITHFUL[2],
            {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "rawOutput": {"x": [1]}},
        ],
        True,
        True,
    ),
    "blocks that are no text": (
        [
            {
                "sessionUpdate": "user_message",
                "messageId": "u1",
                "content": [1, None, {"type": "image"}],
            }
        ],
        True,
        True,
    ),
    "a lone surrogate in text": (
        [{"sessionUpdate": "agent_message", "messageId": "a1", "content": _text("\ud800")}],
        False,
        False,
    ),
    "escaped keys": (
        [
            r'{"sessionUpdate": "agent_message", "m\u0065ssageId": "a1", "content": '
            r'{"t\u0079pe": "t\u0065xt", "text": "o\u006b"}}'
        ],
        True,
        True,
    ),
    "a key twice: the last one counts": (
        [
            '{"sessionUpdate": "agent_message", "messageId": 1, "messageId": "a1", '
            '"content": {"type": "text", "text": "no"}, "content": [{"type": "text", '
            '"text": "ok"}]}',
            '{"sessionUpdate": "tool_call", "toolCallId": "t1", "status": 5, "status": "pending"}',
        ],
        True,
        True,
    ),
    "a key twice, the last one null": (
        ['{"sessionUpdate": "agent_message_chunk", "messageId": "a1", "messageId": null}'],
        True,
        True,
    ),
    "nested deeply, within orjson's limit": (
        [
            '{"sessionUpdate": "tool_call", "toolCallId": "t1", "status": "pending", '
            '"rawInput": ' + "[" * 600 + "]" * 600 + "}"
        ],
        True,
        True,
    ),
    "nested beyond every parser's limit": (
        [
            FAITHFUL[0],
            '{"sessionUpdate": "agent_message", "messageId": "a1", "content": '
            + "[" * 1100
            + "]" * 1100
            + "}",
        ],
        True,
        True,
    ),
    "a repeated whole message, chunks before it": (
        [
            {"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": _text("o")},
            {"sessionUpdate": "agent_message", "messageId": "a1", "content": _text("k")},
            {"sessionUpdate": "agent_message", "messageId": "a1", "content": _text("k")},
            FAITHFUL[2],
            FAITHFUL[2],
        ],
        True,
        True,
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_shapes_take_the_path_that_can_read_them(tmp_path: Path, name: str) -> None:
    """The same fields on both paths; the native path takes what it can prove (an update it
    cannot read natively is read by the Python path's functions alone), the rest the Python
    path (a text polars cannot hold: a lone surrogate)."""
    updates, plain, native = HOSTILE[name]
    a = acp_trace.analyze(_turn_then_replay(updates, plain=plain).write(tmp_path / "t.jsonl"))
    assert same(a) == (1 if native else 0)


@pytest.mark.slow
def test_a_hundred_thousand_messages_in_one_replay_natively(tmp_path: Path) -> None:
    """100,000 messages in one replay against 100,000 under other ids: the native path, the
    same differences."""
    b = TraceBuilder()
    for suffix in ("", "-x"):
        rid = b.resume("s1")
        for i in range(100_000):
            b.update(
                "s1",
                "agent_message",
                dt=0.001,
                messageId=f"m{i}{suffix}",
                content=_text(f"t{i % 7}"),
            )
        b.marker("s1")
        b.response(rid, {})
    assert same(acp_trace.analyze(b.write(tmp_path / "t.jsonl"))) == 2
