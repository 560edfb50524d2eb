"""How the watch engine's cost per tick scales with the length of the session (issue 31: "keeps
up with 10,000 updates a second ... without growing memory"), offline and as fast as it goes.

A flood trace like the one flood_agent.py makes through `acp-trace record` (REPLAYS resumes of
PER updates each, stamped at RATE updates a second, a 50 ms gap before each response) is
written to a file a tick of trace time at a time (50 ms: what the tap writes in that time),
and the engine (`watch.engine.Engine`, the analyzer in the same thread, its clock the trace's)
takes one step per tick. Per tenth of the trace: the analyzer's runs, the rows each run read
(the window and the context; settled windows are folded out after the run), its CPU per run, the engine's CPU over the trace time of that tenth (its share of one
core at 10,000 updates a second) and the process's RSS. A cost that does not grow from the
first tenth to the last is what "keeps up indefinitely" needs.

    python benchmarks/bench_watch_scaling.py [--replays 200] [--per 5000] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from acp_trace.watch import judge as judge_mod
from acp_trace.watch.engine import Engine

TICK = 0.05  # seconds of trace time per engine step (the screen's and jsonl's tick)


def flood_lines(replays: int, per: int, rate: float) -> Iterator[tuple[int, bytes]]:
    """(t_ns, line) of a flood trace: header, initialize, session/new, then the replays
    (made as they are taken: the trace is never held in memory)."""
    header = {
        "acp_trace": 1,
        "kind": "header",
        "started_at": "2026-12-02T04:00:00.000000Z",
        "command": ["flood_agent.py"],
        "cwd": "/tmp",
        "pid": 1,
        "recorder": "acp-trace bench",
    }
    yield 0, orjson.dumps(header)
    seq, t = 0, 0

    def add(src: str, msg: dict[str, Any], dt_ns: int) -> tuple[int, bytes]:
        nonlocal seq, t
        seq, t = seq + 1, t + dt_ns
        return t, orjson.dumps({"seq": seq, "t_ns": t, "src": src, "msg": msg})

    yield add(
        "client", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}, 1_000_000
    )
    yield add("agent", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2}}, 1_000_000)
    new = {"cwd": "/tmp", "mcpServers": []}
    yield add(
        "client", {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": new}, 1_000_000
    )
    yield add("agent", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "flood"}}, 1_000_000)
    step = int(1e9 / rate)
    for r in range(replays):
        params = {"sessionId": "flood", "cwd": "/tmp", "replayFrom": {"type": "start"}}
        rid = 2 + r
        yield add(
            "client",
            {"jsonrpc": "2.0", "id": rid, "method": "session/resume", "params": params},
            300_000,
        )
        for n in range(per):
            update = {
                "sessionUpdate": "agent_message_chunk",
                "messageId": f"m{n // 50}",
                "content": {"type": "text", "text": f"chunk {n} of the replayed history"},
            }
            msg = {"sessionId": "flood", "update": update}
            yield add("agent", {"jsonrpc": "2.0", "method": "session/update", "params": msg}, step)
        marker = {"sessionId": "flood", "update": {"sessionUpdate": "replay_complete"}}
        yield add("agent", {"jsonrpc": "2.0", "method": "session/update", "params": marker}, step)
        yield add("agent", {"jsonrpc": "2.0", "id": rid, "result": {}}, 50_000_000)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replays", type=int, default=200)
    parser.add_argument("--per", type=int, default=5_000)
    parser.add_argument("--rate", type=float, default=10_000.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    n = 5 + args.replays * (args.per + 3)  # the lines of the trace
    runs: list[tuple[int, int, float]] = []  # (lines written, rows held, CPU s)
    real = judge_mod.Judge._judge
    written = 0

    def timed(self: judge_mod.Judge, name: str, book: judge_mod.Book, *rest: Any) -> None:
        rows, start = book.rows, time.process_time()  # the rows this run reads
        real(self, name, book, *rest)
        runs.append((written, rows, time.process_time() - start))

    judge_mod.Judge._judge = timed  # type: ignore[method-assign,assignment]
    steps: list[tuple[int, float, float]] = []  # (lines written, CPU s, RSS MB)
    source = flood_lines(args.replays, args.per, args.rate)
    ahead = next(source, None)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "flood.jsonl"
        path.write_bytes(b"")
        now = [0.0]
        engine = Engine([str(path)], clock=lambda: now[0])
        engine.judge.warm()  # imports and set-up paid before the first record
        t = 0.0
        with path.open("ab") as out:
            while ahead is not None:
                t += TICK
                chunk = []
                while ahead is not None and ahead[0] <= t * 1e9:
                    chunk.append(ahead[1] + b"\n")
                    ahead = next(source, None)
                out.write(b"".join(chunk))
                out.flush()
                written, now[0] = written + len(chunk), t
                start = time.process_time()
                engine.step()
                steps.append((written, time.process_time() - start, rss_mb()))
        for _ in range(3):  # the last verdicts
            now[0] += 5.0
            engine.step()
        engine.close()
    tenths = []
    for d in range(10):
        lo, hi = n * d // 10, n * (d + 1) // 10
        mine = [r for r in runs if lo < r[0] <= hi]
        ticks = [s for s in steps if lo < s[0] <= hi]
        if not ticks:
            continue
        tenths.append(
            {
                "tenth": d + 1,
                "runs": len(mine),
                "rows_mean": round(sum(r[1] for r in mine) / max(1, len(mine))),
                "rows_max": max((r[1] for r in mine), default=0),
                "run_ms_mean": round(1000 * sum(r[2] for r in mine) / max(1, len(mine)), 1),
                "core_share": round(sum(s[1] for s in ticks) / (len(ticks) * TICK), 3),
                "rss_mb": round(ticks[-1][2]),
            }
        )
    print(f"{n:,} lines, {args.replays} replays of {args.per:,} updates at {args.rate:,.0f}/s")
    print("tenth  runs  rows(mean/max)  ms/run  engine CPU / trace time  RSS MB")
    for row in tenths:
        print(
            f"{row['tenth']:>5}  {row['runs']:>4}  {row['rows_mean']:>6} / {row['rows_max']:<6}"
            f"  {row['run_ms_mean']:>6}  {row['core_share']:>23}  {row['rss_mb']:>6}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "tenths": tenths}, indent=1))


if __name__ == "__main__":
    main()
