"""How the watch SCREEN's cost per tick scales with the length of the session (issue 31: the
stamp-to-screen median at 10,000 updates a second, held over minutes).

bench_watch_scaling.py's flood trace (REPLAYS resumes of PER updates at RATE a second) is
written a screen tick of trace time (0.1 s) at a time, and the real screen
(`watch.screen.WatchApp`, headless, 160 x 50 unless --size) follows it, stepped by its own
timer every 0.1 s of wall time: each step writes the next tick of the trace, then the engine
steps (the analyzer in the same thread, its clock the trace's) and the screen redraws.
Per tenth of the trace, per tick: the CPU of the engine's step, of the redraw (the views
and the table syncs) and of the rest of the tick (Textual: the compositor painting, the
tables' idle work), the tick's share of a core, the wall time from the step to the end of
the paint that shows it (`call_after_refresh`), the cyclic garbage collector's pauses, the
cells each table painted, what the screen holds (rows of each table, replays held) and the
RSS. A cost that grows from the first tenth to the last is a screen that falls behind in a
long session. A tick that needs more than 0.1 s of CPU delays the next (Textual skips).

    python benchmarks/bench_watch_screen_scaling.py [--replays 300] [--per 5000]
        [--size 80x24] (the probe of bench_watch*.py runs at Textual's headless 80 x 24)
        [--profile N] [--sort cumulative] (cProfile of the first and the last tenth)
        [--tracemalloc N] (the N biggest growths of Python memory, second tenth to the end)
        [--json FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench_watch_scaling import flood_lines, rss_mb

from acp_trace.watch.engine import Engine
from acp_trace.watch.screen import WatchApp

TICK = 0.1  # seconds of trace time per tick (the screen's TICK)


def held(app: WatchApp) -> dict[str, int]:
    """What the screen and the engine hold now (rows, replays, cached texts)."""
    out = {f"{name}_rows": table.row_count for name, table in app.tables.items()}
    out |= {f"{name}_paints": getattr(table, "paints", 0) for name, table in app.tables.items()}
    out["replays_held"] = len(app.engine.live.replays)
    out["texts"] = len(app.texts)
    out["timeline_shown"] = len(app.shown_rows)
    return out


class Bench(WatchApp):
    """The screen, stepped by its own timer, a tick of the flood trace written before each
    step; the CPU of each step's parts and of the whole tick noted."""

    def __init__(self, engine: Engine, path: Path, args: argparse.Namespace, now: list[float]):
        super().__init__(engine, tick=TICK)
        self.path, self.args, self.now = path, args, now
        self.lines = 5 + args.replays * (args.per + 3)
        self.source = flood_lines(args.replays, args.per, args.rate)
        self.ahead = next(self.source, None)
        self.out = path.open("ab")
        self.written = 0
        self.ticks: list[dict[str, Any]] = []
        self.profiles: dict[int, cProfile.Profile] = {}
        self.snapshots: list[tracemalloc.Snapshot] = []
        self.last: tuple[float, float] | None = None  # (CPU, wall) at the previous step
        self.painted: list[float] = []  # wall seconds, step start -> painted
        self.gc_ms = 0.0  # the cyclic garbage collector's pauses since the last step
        self._gc_start = 0.0
        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.gc_ms += (time.perf_counter() - self._gc_start) * 1000

    def step(self) -> None:
        cpu, wall = time.process_time(), time.monotonic()
        if self.last is not None and self.ticks:
            self.ticks[-1]["tick"] = cpu - self.last[0]
            self.ticks[-1]["wall"] = wall - self.last[1]
            self.ticks[-1]["gc"], self.gc_ms = self.gc_ms, 0.0
        self.last = (cpu, wall)
        if self.ahead is None:  # the last verdicts (the clock goes on)
            self.now[0] += TICK
            if self.engine.judge_idle():
                self.out.close()
                self.exit()
            super().step()
            return
        t = self.now[0] + TICK
        chunk = []
        while self.ahead is not None and self.ahead[0] <= t * 1e9:
            chunk.append(self.ahead[1] + b"\n")
            self.ahead = next(self.source, None)
        self.out.write(b"".join(chunk))
        self.out.flush()
        self.written, self.now[0] = self.written + len(chunk), t
        tenth = min(9, self.written * 10 // self.lines)
        for prof in self.profiles.values():
            prof.disable()
        if self.args.profile and tenth in (0, 9):
            self.profiles.setdefault(tenth, cProfile.Profile()).enable()
        if self.args.tracemalloc and tenth == 1 and not self.snapshots:
            self.snapshots.append(tracemalloc.take_snapshot())
        c0 = time.process_time()
        self.engine.step()
        c1 = time.process_time()
        self.redraw(force=False)
        c2 = time.process_time()
        self.call_after_refresh(self._painted, wall)
        self.ticks.append(
            {
                "written": self.written,
                "engine": c1 - c0,
                "redraw": c2 - c1,
                "rss": rss_mb(),
                **held(self),
            }
        )

    def _painted(self, wall: float) -> None:
        if self.ticks:
            self.ticks[-1]["painted"] = time.monotonic() - wall


def drive(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    now = [0.0]
    engine = Engine([str(path)], clock=lambda: now[0])
    engine.judge.warm()
    app = Bench(engine, path, args, now)
    width, height = (int(x) for x in args.size.split("x"))
    app.run(headless=True, size=(width, height))
    for prof in app.profiles.values():
        prof.disable()
    if args.tracemalloc:
        app.snapshots.append(tracemalloc.take_snapshot())
    n, ticks = app.lines, [x for x in app.ticks if "tick" in x]
    tenths = []
    for d in range(10):
        lo, hi = n * d // 10, n * (d + 1) // 10
        mine = [x for x in ticks if lo < x["written"] <= hi]
        if not mine:
            continue
        row: dict[str, Any] = {"tenth": d + 1, "ticks": len(mine)}
        for what in ("engine", "redraw", "tick"):
            row[f"{what}_ms"] = round(1000 * sum(x[what] for x in mine) / len(mine), 2)
        row["rest_ms"] = round(row["tick_ms"] - row["engine_ms"] - row["redraw_ms"], 2)
        row["gc_ms"] = round(sum(x["gc"] for x in mine) / len(mine), 2)  # wall, in the tick
        row["core_share"] = round(sum(x["tick"] for x in mine) / sum(x["wall"] for x in mine), 3)
        paints = sorted(x["painted"] for x in mine if "painted" in x)
        row["painted_ms"] = round(1000 * paints[len(paints) // 2], 1) if paints else None
        for key in ("sessions_rows", "replays_rows", "timeline_rows", "replays_held"):
            row[key] = mine[-1][key]
        before = ticks[ticks.index(mine[0]) - 1] if ticks.index(mine[0]) else None
        for name in app.tables:  # cells painted a tick (a LiveTable counts them)
            was = before[f"{name}_paints"] if before else 0
            row[f"{name}_paints"] = round((mine[-1][f"{name}_paints"] - was) / len(mine), 1)
        row["rss_mb"] = round(mine[-1]["rss"])
        tenths.append(row)
    result: dict[str, Any] = {"lines": n, "tenths": tenths}
    for tenth, prof in app.profiles.items():
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats(args.sort).print_stats(args.profile)
        result[f"profile_tenth_{tenth + 1}"] = buf.getvalue()
    if len(app.snapshots) == 2:
        growth = app.snapshots[1].compare_to(app.snapshots[0], "lineno")[: args.tracemalloc]
        result["tracemalloc_growth"] = [str(s) for s in growth]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replays", type=int, default=300)
    parser.add_argument("--per", type=int, default=5_000)
    parser.add_argument("--rate", type=float, default=10_000.0)
    parser.add_argument("--size", default="160x50", help="the screen, columns x lines")
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--sort", default="tottime", help="the profile's order (pstats)")
    parser.add_argument("--tracemalloc", type=int, default=0)
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.tracemalloc:
        tracemalloc.start(8)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "flood.jsonl"
        path.write_bytes(b"")
        result = drive(args, path)
    print(f"{result['lines']:,} lines, {args.replays} replays of {args.per:,} updates")
    print(
        "tenth  ticks  CPU ms a tick: engine / redraw / Textual / all  core  step->painted"
        "  rows: sessions replays timeline  replays held  RSS MB"
    )
    for r in result["tenths"]:
        print(
            f"{r['tenth']:>5}  {r['ticks']:>5}  {r['engine_ms']:>14} / {r['redraw_ms']:>6} /"
            f" {r['rest_ms']:>7} / {r['tick_ms']:>6}  {r['core_share']:>4}"
            f"  {r['painted_ms'] or '-':>10} ms  {r['sessions_rows']:>13}"
            f" {r['replays_rows']:>7} {r['timeline_rows']:>8}  {r['replays_held']:>12}"
            f"  {r['rss_mb']:>6}  paints {r['sessions_paints']} {r['replays_paints']}"
            f" {r['timeline_paints']}  gc {r['gc_ms']} ms"
        )
    for key in sorted(k for k in result if k.startswith("profile")):
        print(f"--- {key}\n{result[key]}")
    for line in result.get("tracemalloc_growth", []):
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), **result}, indent=1))


if __name__ == "__main__":
    main()
