"""Check that an optimization changed no behaviour: every analysis table, before and after.

    git worktree add /tmp/acp-base COMMIT        # the tree to compare against
    .venv/bin/python benchmarks/differential.py --baseline /tmp/acp-base/src
    .venv/bin/python benchmarks/differential.py --self     # this tree's readers, each other

Builds a corpus (the sample traces, the test data, small generated traces, random damaged
lines, random protocol-shaped traces from tests/tracebuilder.py, hostile traces: lone
surrogates, deep nesting, integers beyond 64 bits, duplicate and escaped keys, concatenated
traces, files to skip, CRLF and blank lines; several traces in one table), then computes the
records, timeline, replays, findings, turns, latency and summary tables of each input, with
and without `--marker-meta`, in child processes, and reports every table that differs. Exit
code 1 when one does.

- `--baseline SRC`: acp_trace from another tree against this one. Where this tree fixes a
  crash or a merge of ids on hostile input, the difference is the fix (`--hostile-only` runs
  just those inputs, to read them).
- `--self`: this tree four ways: the native reader (trace/blocks.py) into columns, the same
  into row tuples (as it reads small traces), the line reader alone (every block handed to
  trace/lines.py), and the native reader in a pool of 2 processes with byte ranges of 64 KiB:
  the tables must be identical, row order included.
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


def dump(inputs: list[dict[str, Any]], out: Path, variant: str) -> None:
    import acp_trace

    kwargs = _variant(variant)
    results: list[dict[str, Any]] = []
    for spec in inputs:
        tables: dict[str, Any] = {}
        try:
            a = acp_trace.analyze(spec["paths"], marker_meta=spec.get("marker_meta"), **kwargs)
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


def _variant(variant: str) -> dict[str, Any]:
    """Set up one way of reading (see the module doc); the keyword arguments of analyze."""
    try:
        from acp_trace.trace import blocks, pool
    except ImportError:  # a baseline from before the native path
        return {}
    blocks.FAST_MIN_BYTES = 0  # even the smallest trace takes the native path
    if variant == "lines":  # every block goes to the line reader
        blocks._fast = lambda *args: (None, 0)
        blocks._fast_rows = lambda *args: None
    if variant == "rows":  # every block is read into row tuples
        blocks.FAST_MIN_BYTES = 1 << 40
    if variant == "pool":
        pool.RANGE_BYTES = 64 << 10
        return {"workers": 2}
    return {}


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
    for path in [*files, *built, generated / "trace.jsonl", *hostile(work / "hostile")]:
        inputs.append({"paths": [str(path)]})
        inputs.append({"paths": [str(path)], "marker_meta": META})
    inputs.append({"paths": [str(ROOT / "sample_traces"), str(ROOT / "tests/data")]})
    inputs.append({"paths": [str(p) for p in built[:200]]})
    inputs.append({"paths": [str(work / "hostile")]})
    return inputs


def hostile(folder: Path) -> list[Path]:
    """Traces an attacker or bad luck would write (issue 19), each a file of `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    head = b'{"acp_trace":1,"kind":"header","command":["x"]}'
    req = b'{"jsonrpc":"2.0","id":%s,"method":"session/resume","params":{"sessionId":%s}}'
    rec = b'{"seq":%d,"t_ns":%d,"src":"%s","msg":%s}'
    big, big2 = b"123456789012345678901234567890", b"123456789012345678901234567891"
    deep = b"[" * 100_000 + b"]" * 100_000
    just_over = b"[" * 1025 + b"]" * 1025
    answer = b'{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s"}}'
    update = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%s,"update":{"sessionUpdate":%s}}}'
    files = {
        "surrogates.jsonl": [
            b'{"acp_trace":1,"kind":"header","command":["ag\\ud83dent"]}',
            rec % (1, 1, b"client", req % (b'"\\ud83d"', b'"s\\ud83d"')),
            rec % (2, 2, b"agent", answer % b'"\\ud83d"'),
            rec % (3, 3, b"agent", update % (b'"s\\udc00"', b'"agent_message\\ud83d"')),
            rec % (4, 4, b"client", b'{"jsonrpc":"2.0","id":9,"method":"x\\ud83d"}'),
            b'{"seq":5,"t_ns":5,"src":"stderr","text":"cut \\ud83d emoji"}',
            b'{"seq":6,"t_ns":6,"src":"tap","event":"exit\\ud83d","note":"\\udfff"}',
            b'{"seq":7,"t_ns":7,"src":"nope\\ud83d","text":"x"}',
            b'{"seq":8,"t_ns":8,"src":"agent","msg":[' + answer % b'"\\udc01"' + b"]}",
        ],
        "deep.jsonl": [
            head,
            rec % (1, 1, b"agent", deep),
            rec % (2, 2, b"agent", just_over),
            rec
            % (3, 3, b"client", b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + deep + b"}"),
            rec % (4, 4, b"client", req % (b"2", b'"s"')),
        ],
        "deep-header.jsonl": [b'{"acp_trace":1,"kind":"header","x":' + deep + b"}", head],
        "deep-bare.jsonl": [req % (b"1", b'"s"'), deep, b'{"jsonrpc":"2.0","x":' + deep + b"}"],
        "huge-ints.jsonl": [
            head,
            rec % (1, 1, b"client", req % (big, b'"s1"')),
            rec % (2, 2, b"client", req % (big2, b'"s2"')),
            rec % (3, 3, b"agent", answer % big2),
            rec % (4, 4, b"agent", answer % big),
            rec
            % (
                5,
                5,
                b"agent",
                b'{"jsonrpc":"2.0","id":-' + big + b',"error":{"code":' + big + b"}}",
            ),
            b'{"seq":' + big + b',"t_ns":1,"src":"agent","text":"x"}',
            b'{"seq":6,"t_ns":' + big + b',"src":"agent","text":"x"}',
            b'{"seq":7,"t_ns":7,"src":"tap","event":"exit","code":' + big + b"}",
        ],
        "odd-ids.jsonl": [head]
        + [
            rec % (i, i, b"client", req % (v, b'"s"'))
            for i, v in enumerate(
                [b"1.0", b"1e2", b"-0", b"true", b"[1]", b'{"a":1}', b"null", b'"1"', b"1", b"1.5"],
                1,
            )
        ]
        + [
            rec % (20 + i, 20 + i, b"agent", answer % v)
            for i, v in enumerate([b"1", b'"1"', b"100.0", b"0", b"null", b"1.0"])
        ],
        "duplicate-keys.jsonl": [
            head,
            b'{"seq":1,"t_ns":1,"src":"agent","msg":'
            + answer % b"1"
            + b',"msg":'
            + answer % b"2"
            + b"}",
            b'{"seq":2,"t_ns":2,"src":"agent","msg":' + answer % b"3" + b',"seq":9}',
            b'{"seq":3,"t_ns":3,"src":"agent","m\\u0073g":' + answer % b"4" + b"}",
            b'{"seq":4,"seq":5,"t_ns":4,"src":"agent","msg":' + answer % b"5" + b"}",
            rec % (6, 6, b"agent", b'{"jsonrpc":"2.0","id":6,"id":7,"result":{}}'),
            rec
            % (
                7,
                7,
                b"agent",
                b'{"jsonrpc":"2.0","id":8,"result":{"sessionId":"a","sessionId":"b"}}',
            ),
            b'{"msg":' + answer % b"9" + b',"seq":8,"t_ns":8,"src":"agent"}',
            b'{"seq": 9, "t_ns": 9, "src": "agent", "msg": ' + answer % b"10" + b" }",
            rec % (10, 10, b"agent", b'{"jsonrpc":"2.0","\\u0069d":11,"result":{}}'),
            b'{"seq":11,"t_ns":11,"src":"stderr","text":"a","text":"b"}',
        ],
        "update-fields.jsonl": [head]
        + [
            rec
            % (
                i,
                i,
                b"agent",
                b'{"jsonrpc":"2.0","method":"session/update","params":'
                b'{"sessionId":"s","update":{"sessionUpdate":"agent_message",%s}}}' % v,
            )
            for i, v in enumerate(UPDATE_FIELDS, 1)
        ]
        + [
            rec % (100 + i, 100 + i, b"agent", b'{"jsonrpc":"2.0","id":%d,%s}' % (i, v))
            for i, v in enumerate(RESULT_FIELDS, 1)
        ]
        + [
            rec
            % (
                200,
                200,
                b"client",
                b'{"jsonrpc":"2.0","id":7,"method":"session/prompt",'
                b'"params":{"sessionId":"s","prompt":[]}}',
            ),
            rec
            % (
                201,
                201,
                b"agent",
                b'{"jsonrpc":"2.0","method":"session/update","params":'
                b'{"sessionId":"s","update":{"sessionUpdate":"session_info_update","_meta":'
                b'{"' + META.encode() + b'":{"state":"accepted"}},"title":"t"}}}',
            ),
            rec
            % (
                202,
                202,
                b"agent",
                b'{"jsonrpc":"2.0","method":"session/update","params":'
                b'{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle",'
                b'"stopReason":"cancelled","_meta":{"claudeCode":{"assistantMessageUuid":1}}}}}',
            ),
        ],
        "concatenated.jsonl": [
            head,
            rec % (1, 1, b"client", req % (b"1", b'"s"')),
            head,
            rec % (1, 1, b"agent", answer % b"1"),
            head,
        ],
        "header-word-in-content.jsonl": [
            head,
            rec
            % (
                1,
                1,
                b"client",
                b'{"jsonrpc":"2.0","method":"n","params":{"acp_trace":1,"kind":"header"}}',
            ),
        ],
        "crlf.jsonl": [
            head + b"\r",
            rec % (1, 1, b"client", req % (b"1", b'"s"')) + b"\r",
            b"",
            b"   ",
            rec % (2, 2, b"agent", answer % b"1") + b"\r",
        ],
        "mixed.jsonl": [
            head,
            b'{"seq":1,"t_ns":null,"src":"stderr","text":"log \\u001b[31m"}',
            rec % (2, 2, b"agent", b'{"jsonrpc":"2.0","method":"x","params":{"a":"\xff"}}'),
            rec % (3, 3, b"agent", b'{"jsonrpc":"2.0",\r"method":"x"}'),
            b'{"seq":4,"t_ns":4,"src":"agent","b64":"aGVsbG8="}',
            b'{"seq":5,"t_ns":5,"src":"agent","text":"abc","truncated":true,"bytes":9}',
            rec % (6, 6, b"agent", b"5"),
            rec % (7, 7, b"agent", b'"s"'),
            b'{"seq":8,"t_ns":8,"src":"agent","msg":{"jsonrpc":"2.0","method":"x"}',
            b'{"seq":9,"t_ns":9,"src":"agent","msg":1,"text":"x"}',
            b'{"seq":10,"t_ns":10,"src":"agent"}',
            b"\x00\x01garbage",
            b"[1,2]",
        ],
    }
    paths = []
    for name, lines in files.items():
        paths.append(_write(folder / name, lines))
    cut = folder / "cut-last-line.jsonl"
    cut.write_bytes(head + b"\n" + rec % (1, 1, b"client", req % (b"1", b'"s"')))
    (folder / "skipped.jsonl").write_bytes(bytes(range(256)) * 4)
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "blank.jsonl").write_bytes(b"\n\n  \n")
    return [*paths, cut]


# The fields of an update and of a result the reader takes as columns (has_message_id, state,
# stop_reason, accepted), in every form a line may hold them.
_ACCEPT = b'"_meta":{"' + META.encode() + b'":%s}'
UPDATE_FIELDS = [
    b'"messageId":"m"',
    b'"messageId":null',
    b'"messageId":""',
    b'"messageId":false',
    b'"messageId":{"a":1}',
    b'"messageId":[]',
    b'"messageId":"m","messageId":null',
    b'"messageId":null,"messageId":"m"',
    b'"messageId":"\\ud83d"',
    b'"m\\u0065ssageId":"m"',
    b'"messageId" :  null',
    b'"state":"idle"',
    b'"state":"idle","state":1',
    b'"state":{"a":"idle"}',
    b'"state":"id\\ud83dle"',
    b'"state":null',
    b'"stopReason":"end_turn"',
    b'"stopReason":["end_turn"]',
    b'"stopReason":"end\\u005fturn"',
    _ACCEPT % b'{"state":"accepted"}',
    _ACCEPT % b'"accepted"',
    _ACCEPT % b'{"state":1}',
    _ACCEPT % b'{"state":"accepted","state":"no"}',
    _ACCEPT % b'{"state":"accepted"},"_meta":null',
    b'"_meta":[1]',
    b'"_meta":"x"',
    b'"_meta":{"executablemd.session-materialization\\/v1":{"state":"accepted"}}',
    b'"state":"idle","stopReason":"cancelled","_meta":{"claudeCode":{"assistantMessageUuid":"u"}}',
]
RESULT_FIELDS = [
    b'"result":{"stopReason":"end_turn"}',
    b'"result":{"stopReason":1}',
    b'"result":{"stopReason":"x\\ud83d"}',
    b'"result":["stopReason"]',
    b'"result":{"stopReason":"cancelled","_meta":{"claudeCode":{"assistantMessageUuid":"u"}}}',
    b'"params":{"update":{"stopReason":"no","messageId":"m"}},"result":{"stopReason":"yes"}',
    b'"error":{"code":1},"result":{"stopReason":"e"}',
    b'"method":"m","params":{"update":{"stopReason":"n"}},"result":{"stopReason":"r"}',
]


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
    update: dict[str, Any] = {
        "sessionUpdate": rng.choice(["agent_message", "replay_complete", "state_update", 1])
    }
    for key, choices in _UPDATE_VALUES.items():
        if rng.random() < 0.3:
            update[key] = rng.choice(choices)
    params["update"] = rng.choice([update, update, update, [update], "x"])
    if rng.random() < 0.3:
        params["stopReason"] = rng.choice(_UPDATE_VALUES["stopReason"])
    msg[rng.choice(["params", "result", "error"])] = params
    return msg


_UPDATE_VALUES: dict[str, list[Any]] = {
    "messageId": ["m", None, "", 0, [], {}],
    "state": ["idle", "running", None, 1, {"state": "idle"}],
    "stopReason": ["end_turn", "cancelled", None, 2, ["x"]],
    "_meta": [{META: {"state": "accepted"}}, {META: "accepted"}, {META: {"state": 0}}, [], None],
}


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


def run(src: Path, inputs: Path, out: Path, variant: str = "fast") -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, __file__, "--dump", str(inputs), str(out), variant]
    subprocess.run(argv, check=True, env=env)
    result: list[dict[str, Any]] = pickle.loads(out.read_bytes())
    return result


def _pooled(index: int, spec: dict[str, Any]) -> bool:
    paths = spec["paths"]
    return (
        index % 10 == 0
        or len(paths) > 1
        or any("hostile" in p or "generated" in p or Path(p).is_dir() for p in paths)
    )


def differences(
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    inputs: list[dict[str, Any]],
    added: dict[str, set[str]] | None = None,
) -> list[str]:
    """Every table that differs. With `added` (against a baseline), a table's columns that
    only `after` has are compared no further and collected in `added` (new columns)."""
    from polars.testing import assert_frame_equal

    found = []
    for index, (x, y) in enumerate(zip(before, after, strict=True)):
        where = f"{index} ({Path(inputs[index]['paths'][0]).name})"
        for name in sorted(set(x) | set(y)):
            a, b = x.get(name), y.get(name)
            try:
                if hasattr(a, "columns") and hasattr(b, "columns"):
                    if added is not None:
                        new = [c for c in b.columns if c not in a.columns]
                        added.setdefault(name, set()).update(new)
                        b = b.drop(new)
                    assert_frame_equal(a, b)
                elif hasattr(a, "columns") or hasattr(b, "columns"):
                    raise AssertionError(
                        f"{type(a).__name__} != {type(b).__name__}: {a!r:.200} {b!r:.200}"
                    )
                else:
                    assert a == b, f"{a!r} != {b!r}"
            except AssertionError as exc:
                found.append(f"input {where}, {name}: {str(exc)[:300]}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", type=Path, help="the `src` directory to compare against")
    parser.add_argument(
        "--self", action="store_true", help="compare this tree's readers (see above)"
    )
    parser.add_argument("--hostile-only", action="store_true", help="only the hostile traces")
    parser.add_argument("--fuzz", type=int, default=300, help="traces of random damaged lines")
    parser.add_argument("--programs", type=int, default=600, help="random protocol-shaped traces")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dump", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump:
        dump(json.loads(Path(args.dump[0]).read_text()), Path(args.dump[1]), args.dump[2])
        return 0
    if args.baseline is None and not args.self:
        parser.error("--baseline or --self is required")
    found: list[str] = []
    with tempfile.TemporaryDirectory(prefix="acp-trace-diff-") as tmp:
        work = Path(tmp)
        if args.hostile_only:
            inputs = [{"paths": [str(p)]} for p in hostile(work / "hostile")]
        else:
            inputs = corpus(work, args.fuzz, args.programs, args.seed)
        (work / "inputs.json").write_text(json.dumps(inputs))
        after = run(ROOT / "src", work / "inputs.json", work / "after.pkl")
        if args.baseline is not None:
            before = run(args.baseline, work / "inputs.json", work / "before.pkl")
            added: dict[str, set[str]] = {}
            found += [f"baseline: {d}" for d in differences(before, after, inputs, added)]
            for name, columns in sorted(added.items()):
                if columns:
                    print(f"columns new in {name} (not compared): {', '.join(sorted(columns))}")
        if args.self:
            for variant in ("lines", "rows"):
                other = run(ROOT / "src", work / "inputs.json", work / f"{variant}.pkl", variant)
                found += [f"{variant}: {d}" for d in differences(after, other, inputs)]
            # A pool starts per input: every tenth input, the hostile and the larger ones.
            picked = [i for i, spec in enumerate(inputs) if _pooled(i, spec)]
            (work / "pooled.json").write_text(json.dumps([inputs[i] for i in picked]))
            other = run(ROOT / "src", work / "pooled.json", work / "pool.pkl", "pool")
            subset = [after[i] for i in picked]
            found += [f"pool: {d}" for d in differences(subset, other, [inputs[i] for i in picked])]
    for line in found:
        print(line)
    print(f"{len(inputs)} inputs, {len(found)} tables differ")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
