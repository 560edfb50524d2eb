"""The watch screen holds the same whatever the session's length (issue 31: "memory bounded
for a session of hours (old rows folded into counts)"), and paints again only what changed:
counted, never timed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult

from acp_trace.watch import views
from acp_trace.watch.engine import Engine
from acp_trace.watch.live import ROWS_KEPT
from acp_trace.watch.screen import TIMELINE_ROWS, TIMELINE_SLACK, WatchApp
from acp_trace.watch.tables import PAINTED_KEPT, LiveTable, Synced
from tracebuilder import TraceBuilder

BATCH = 8  # cycles written between two steps of the screen


def _cycles(n: int) -> list[list[bytes]]:
    """The header and initialize, then `n` cycles of 22 timeline rows each: a resume, four
    turns of history (eight rows: the kinds alternate), its marker, a state snapshot, the
    response and ten stderr lines."""
    b = TraceBuilder(agent="flood-agent")
    out = [list(b.lines)]
    for i in range(n):
        start = len(b.lines)
        rid = b.resume("s")
        b.history("s", 4)
        b.marker("s")
        b.state("s")
        b.response(rid, {}, dt=20)
        for j in range(10):
            b.text("stderr", f"phase=load{j} durationMs={i}")
        out.append(b.lines[start:])
    return out


def _held(n: int, tmp_path: Path) -> dict[str, Any]:
    """What the screen and the engine hold after `n` cycles fed BATCH at a time."""
    path = tmp_path / f"flood-{n}.jsonl"
    parts = _cycles(n)
    path.write_bytes(b"".join(line + b"\n" for line in parts[0]))
    app = WatchApp(Engine([str(path)], interval=0.0), tick=3600.0)  # stepped by the test
    held: dict[str, Any] = {}

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            for start in range(1, len(parts), BATCH):
                with path.open("ab") as out:
                    for part in parts[start : start + BATCH]:
                        out.write(b"".join(line + b"\n" for line in part))
                app.step()
                await pilot.pause()
                timeline = app.tables["timeline"].row_count
                assert timeline <= TIMELINE_ROWS + TIMELINE_SLACK
            deadline = time.monotonic() + 300  # a hang guard only
            while not (app.engine.judge_idle() and app.drawn == app.engine.version):
                assert time.monotonic() < deadline, "the trace was never all read and decided"
                app.step()
                await pilot.pause(0.01)
            trace = next(iter(app.engine.live.traces.values()))
            held.update(
                {name: table.row_count for name, table in app.tables.items()},
                shown=len(app.shown_rows),
                cells=len(app.row_cells.made),
                session_rows=len(trace.sessions["s"].rows),
                stderr_rows=len(trace.stderr.rows),
                folded=sum(trace.sessions["s"].folded.values()),
                painted=max(
                    len(t.painted) for t in app.tables.values() if isinstance(t, LiveTable)
                ),
                newest=[str(c) for c in app.tables["replays"].get_row_at(0)],
                head=str(app.w_head.render()),
                updates=sum(trace.sessions["s"].counts.values()),
            )

    asyncio.run(main())
    return held


def test_the_screen_holds_as_much_after_160_cycles_as_after_40(tmp_path: Path) -> None:
    """Each table, the timeline's cells and the live picture's rows stay at their bounds:
    the older rows are folded into counts (the head line says how many), and the replays
    table lists the newest (and the slowest)."""
    short, long = _held(40, tmp_path), _held(160, tmp_path)
    for held in (short, long):
        assert TIMELINE_ROWS <= held["timeline"] <= TIMELINE_ROWS + TIMELINE_SLACK
        assert held["shown"] == held["timeline"]
        assert held["cells"] == TIMELINE_ROWS + TIMELINE_SLACK  # made for the newest only
        assert held["painted"] <= PAINTED_KEPT
        assert "older rows folded into the counts" in held["head"]
    for key in ("sessions", "replays", "session_rows", "stderr_rows"):
        assert short[key] == long[key], key
    assert long["replays"] == views.REPLAYS_SHOWN  # every replay has the same gap
    assert long["session_rows"] == long["stderr_rows"] == ROWS_KEPT
    assert short["updates"] * 4 == long["updates"]  # the counts go on: nothing is lost
    assert long["folded"] > short["folded"] > 0
    assert long["newest"][3] == short["newest"][3] == "complete"  # #, id, session, outcome


class _One(App[None]):
    def compose(self) -> ComposeResult:
        yield LiveTable(id="t")


def test_a_live_table_paints_again_only_the_cells_that_changed() -> None:
    """A count that grows, a row that arrives: the table paints those cells, not every
    visible one (Textual's own cache is dropped at every edit)."""

    def rows(n: int, grown: str = "1") -> list[tuple[str, list[Text]]]:
        return [(f"k{i}", [Text(f"row {i:02}"), Text(grown if i == 3 else "1")]) for i in range(n)]

    async def main() -> None:
        app = _One()
        async with app.run_test(size=(60, 30)) as pilot:
            table = app.query_one("#t", LiveTable)
            table.add_columns("key", "n")
            synced = Synced(table)
            made = rows(20)
            synced.sync(made)
            await pilot.pause()
            first = table.paints
            assert first >= 40  # every visible cell, once
            synced.sync([*made[:3], (made[3][0], [made[3][1][0], Text("2")]), *made[4:]])
            await pilot.pause()
            assert table.paints - first == 1  # the count that grew
            again = table.paints
            synced.sync([*synced.shown, ("k20", [Text("row 20"), Text("1")])])
            await pilot.pause()
            assert table.paints - again == 2  # the row that arrived

    asyncio.run(main())
