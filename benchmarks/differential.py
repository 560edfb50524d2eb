"""Check that an optimization changed no behaviour: every analysis table, before and after.

    git worktree add /tmp/acp-base COMMIT        # the tree to compare against
    .venv/bin/python benchmarks/differential.py --baseline /tmp/acp-base/src

Builds a corpus (the sample traces, the test data, small generated traces, random damaged
lines, random protocol-shaped traces from tests/tracebuilder.py, several traces in one
table), then computes the records, timeline, replays, findings, turns, latency and summary
tables of each input, with and without `--marker-meta`, once with acp_trace from the
baseline tree and once from this one (each in a child process), and reports every table
that differs. Exit code 1 when one does.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
META = "executablemd.session-materialization/v1"


# ---------------------------------------------------------------- the child: dump the tables


def dump(inputs: list[dict[str, Any]], out: Path) -> None:
    import acp_trace

    results: list[dict[str, Any]] = []
    for spec in inputs:
        tables: dict[str, Any] = {}
        try:
            a = acp_trace.analyze(spec["paths"], marker_meta=spec.get("marker_meta"))
            tables = {
                "records": a.records,
                "timeline": a.timeline,
                "replays": a.replays,
                "findings": a.findings(),
                "turns": a.turns,
                "latency": a.latency("agent"),
                "summary": _summary(a.records),
            }
        except Exception as exc:  # a crash must be the same crash
            tables = {"error": repr(exc)}
        results.append(tables)
    out.write_bytes(pickle.dumps(results))


def _summary(records: Any) -> Any:
    for module in ("acp_trace.analysis.summary", "acp_trace.summary", "acp_trace.timeline"):
        try:
            return __import__(module, fromlist=["summarize"]).summarize(records)
        except (ImportError, AttributeError):
            continue
    return None


# ---------------------------------------------------------------- the corpus


def corpus(work: Path, fuzz: int, programs: int, seed: int) -> list[dict[str, Any]]:
    files = [p for d in ("sample_traces", "tests/data") for p in sorted((ROOT / d).rglob("*"))]
    files = [p for p in files if p.is_file()]
    rng = random.Random(seed)
    for i in range(fuzz):
        files.append(_write(work / f"fuzz{i:05d}.jsonl", _damaged(rng)))
    built = [
        _program(random.Random(seed + i)).write(work / f"p{i:05d}.jsonl") for i in range(programs)
    ]
    generated = work / "generated"
    subprocess.run(
        [
            sys.executable,
            str(HERE / "gen_trace.py"),
            "--mb",
            "2",
            "--history",
            "300",
            "--out",
            str(generated),
        ],
        check=True,
        capture_output=True,
    )
    inputs: list[dict[str, Any]] = []
    for path in [*files, *built, generated / "trace.jsonl"]:
        inputs.append({"paths": [str(path)]})
        inputs.append({"paths": [str(path)], "marker_meta": META})
    inputs.append({"paths": [str(ROOT / "sample_traces"), str(ROOT / "tests/data")]})
    inputs.append({"paths": [str(p) for p in built[:200]]})
    return inputs


def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _damaged(rng: random.Random) -> list[bytes]:
    """A header and random records: wrong types, missing keys, huge numbers, cut lines."""
    values: list[Any] = [None, True, 0, -1, 2**64, 1.5, "", "x", [], {}, [1], {"a": 1}]
    lines = [b'{"acp_trace":1,"kind":"header","command":["x"]}']
    for seq in range(rng.randint(0, 12)):
        rec: dict[str, Any] = {"seq": rng.choice([seq, seq, rng.choice(values)])}
        rec["t_ns"] = rng.choice([seq * 1000, rng.choice(values)])
        rec["src"] = rng.choice(["client", "agent", "stderr", "tap", "nope"])
        key = rng.choice(["msg", "msg", "text", "b64", "event", None])
        if key == "msg":
            rec["msg"] = rng.choice([_message(rng), [_message(rng)], rng.choice(values)])
        elif key is not None:
            rec[key] = rng.choice([*values, "aGVsbG8="])
        if rng.random() < 0.1:
            rec["truncated"], rec["bytes"] = True, rng.choice(values)
        line = json.dumps(rec).encode()
        lines.append(line[: rng.randint(1, len(line))] if rng.random() < 0.05 else line)
    return lines


def _message(rng: random.Random) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": rng.choice(["2.0", "2.0", "1.0"])}
    if rng.random() < 0.7:
        msg["id"] = rng.choice([1, "1", None, 2.0, [1]])
    if rng.random() < 0.7:
        msg["method"] = rng.choice(["session/update", "session/resume", "session/load", 5])
    params = {"sessionId": rng.choice(["s1", None, 3]), "replayFrom": {"type": "start"}}
    params["update"] = {"sessionUpdate": rng.choice(["agent_message", "replay_complete", 1])}
    msg[rng.choice(["params", "result", "error"])] = params
    return msg


def _program(rng: random.Random) -> Any:
    """A random trace made of TraceBuilder calls: resumes, loads, updates, answers, events."""
    sys.path.insert(0, str(ROOT / "tests"))
    from acp_trace.jsonrpc import HISTORY_KINDS, LIVE_KINDS
    from tracebuilder import TraceBuilder

    kinds = [*sorted(HISTORY_KINDS), *sorted(LIVE_KINDS), *["replay_complete"] * 3]
    b = TraceBuilder(protocol=rng.choice([1, 2, 2, None]))
    pending: list[Any] = []
    for _ in range(rng.randint(5, 120)):
        _step(b, rng, kinds, pending, rng.choice(["s1", "s2", "s3"]))
    return b


def _step(b: Any, rng: random.Random, kinds: list[str], pending: list[Any], s: str) -> None:
    op = rng.random()
    if op < 0.1:
        pending.append(b.resume(s, cursor=rng.choice([{"type": "start"}, None, {"type": "x"}])))
    elif op < 0.14:
        pending.append(b.load(s))
    elif op < 0.17:
        pending.append(b.request(rng.choice(["session/new", "session/prompt"]), {"sessionId": s}))
    elif op < 0.55:
        kind = rng.choice([*kinds, "subagent_update", "weird_kind"])
        fields: dict[str, Any] = {"messageId": "m"} if rng.random() < 0.6 else {}
        if kind == "subagent_update":
            fields["sessionId"] = rng.choice(["c1", "c2"])
        if rng.random() < 0.05:
            fields["_meta"] = {META: {"state": "accepted"}}
        b.update(rng.choice([s, s, s, "c1"]), kind, dt=rng.random() * 3, **fields)
        for _ in range(rng.randint(0, 30) if rng.random() < 0.3 else 0):
            b.update(s, rng.choice(kinds[:19]), dt=rng.random(), messageId="x")
    elif op < 0.75 and pending:
        rid = pending.pop(rng.randrange(len(pending)))
        if rng.random() < 0.6:
            b.response(rid, {"sessionId": s} if rng.random() < 0.3 else {"stopReason": "end_turn"})
        else:
            b.error(rid, rng.choice([-32602, -32603, -32800]), data={"sessionId": s})
    elif op < 0.82:
        rid = b.request("session/request_permission", {"sessionId": s}, src="agent")
        if rng.random() < 0.7:
            b.response(rid, {}, src="client")
    elif op < 0.86 and pending:
        b.notify("$/cancel_request", {"requestId": pending[-1]}, src="client")
    elif op < 0.9:
        b.text(rng.choice(["agent", "stderr"]), rng.choice(["hello", "", "{bad"]))
    elif op < 0.92:
        b.event(rng.choice(["eof", "exit", "dropped"]), stream="agent", code=0, count=1)
    else:
        b.state(s, rng.choice(["idle", "running"]), dt=rng.random() * 2)


# ---------------------------------------------------------------- the parent: compare


def run(src: Path, inputs: Path, out: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, __file__, "--dump", str(inputs), str(out)]
    subprocess.run(argv, check=True, env=env)
    result: list[dict[str, Any]] = pickle.loads(out.read_bytes())
    return result


def differences(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str]:
    from polars.testing import assert_frame_equal

    found = []
    for index, (x, y) in enumerate(zip(before, after, strict=True)):
        for name in sorted(set(x) | set(y)):
            a, b = x.get(name), y.get(name)
            try:
                if hasattr(a, "columns") and hasattr(b, "columns"):
                    assert_frame_equal(a, b)
                else:
                    assert a == b, f"{a!r} != {b!r}"
            except AssertionError as exc:
                found.append(f"input {index}, {name}: {str(exc)[:300]}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", type=Path, help="the `src` directory to compare against")
    parser.add_argument("--fuzz", type=int, default=300, help="traces of random damaged lines")
    parser.add_argument("--programs", type=int, default=600, help="random protocol-shaped traces")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dump", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump:
        dump(json.loads(Path(args.dump[0]).read_text()), Path(args.dump[1]))
        return 0
    if args.baseline is None:
        parser.error("--baseline is required")
    with tempfile.TemporaryDirectory(prefix="acp-trace-diff-") as tmp:
        work = Path(tmp)
        inputs = corpus(work, args.fuzz, args.programs, args.seed)
        (work / "inputs.json").write_text(json.dumps(inputs))
        before = run(args.baseline, work / "inputs.json", work / "before.pkl")
        after = run(ROOT / "src", work / "inputs.json", work / "after.pkl")
    found = differences(before, after)
    for line in found:
        print(line)
    print(f"{len(inputs)} inputs, {len(found)} tables differ")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
