"""The watch screen under Textual's own harness (App.run_test, the Pilot): the replay at the
centre, the keys (help, filters, findings only, pause, slowest, a message as JSON), and trace
text shown escaped, never as terminal control or rich markup."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from acp_trace.watch.engine import Engine
from acp_trace.watch.screen import AskScreen, TextScreen, WatchApp
from tracebuilder import TraceBuilder

HOSTILE = "evil\x1b]0;pwned\x07[bold red]x[/]\u202e"


def _trace(tmp_path: Path) -> Path:
    """Two replays (a quick one with its marker, a slow one without), and hostile text."""
    b = TraceBuilder(agent="demo-agent", version="9.9")
    for session, gap, marker in (("fast", 100, True), (HOSTILE, 900, False)):
        rid = b.resume(session)
        b.history(session, 2)
        if marker:
            b.marker(session)
        b.state(session)
        b.response(rid, {}, dt=gap)
    b.text("stderr", "phase=load durationMs=12 \x1b[2J[link=http://x]y[/link]")
    b.event("exit", code=0, signal=None)
    return b.write(tmp_path / "t.jsonl")


def _run(tmp_path: Path, test: Callable[[WatchApp, Pilot[None]], Awaitable[None]]) -> None:
    app = WatchApp(Engine([str(_trace(tmp_path))], interval=0.0), tick=0.05)

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            deadline = time.monotonic() + 300  # a hang guard only
            while not (app.engine.all_ended() and app.drawn == app.engine.version):
                assert time.monotonic() < deadline, "the trace was never all read and decided"
                await pilot.pause(0.05)
            await test(app, pilot)

    asyncio.run(main())


def _text(app: WatchApp, selector: str) -> str:
    widget = app.screen.query_one(selector, Static)
    content = widget.render()
    return content.plain if isinstance(content, Text) else str(content)


def _cells(app: WatchApp, selector: str) -> list[str]:
    table = app.query_one(selector, DataTable)
    return [str(c) for r in range(table.row_count) for c in table.get_row_at(r)]


def test_replays_listed_and_trace_text_escaped_not_obeyed(tmp_path: Path) -> None:
    """The replays with outcome, gap and findings; an ESC/OSC sequence and rich markup in a
    session id are shown as text; `s` puts the slowest replay at the centre; Enter on a
    timeline row opens its message as JSON, escaped."""

    async def check(app: WatchApp, pilot: Pilot[None]) -> None:
        cells = _cells(app, "#replays")
        assert "complete" in cells and "unmarked" in cells
        assert any("marker-missing" in c for c in cells)
        assert "1 trace, 2 sessions, " in _text(app, "#status")
        shown = " ".join(_cells(app, "#sessions") + _cells(app, "#replays"))
        assert "evil\\x1b]0;pwned\\x07[bold red]x[/]\\u202e" in shown
        assert "\x1b" not in shown and "\x07" not in shown
        await pilot.press("s")  # the slow, hostile replay
        await pilot.pause(0.1)
        panel = _text(app, "#replay")
        assert "[bold red]x[/]" in panel and "\\x1b" in panel

    _run(tmp_path, check)


def test_keys_help_filter_findings_pause(tmp_path: Path) -> None:
    async def check(app: WatchApp, pilot: Pilot[None]) -> None:
        await pilot.press("question_mark")
        assert isinstance(app.screen, TextScreen)
        assert "jump to the slowest replay" in _text(app, "#text-body")
        await pilot.press("escape")
        await pilot.press("f")
        assert app.flt.findings
        cells = _cells(app, "#replays")
        assert "complete" not in cells and "unmarked" in cells
        await pilot.press("f", "slash")
        assert isinstance(app.screen, AskScreen)
        await pilot.press(*"state", "enter")
        await pilot.pause(0.1)
        assert app.flt.text == "state"
        kinds = _cells(app, "#timeline")[1::4]
        assert kinds and set(kinds) == {"state"}
        await pilot.press("p")
        assert app.paused and "PAUSED" in _text(app, "#status")
        before, version = app.redraws, app.engine.version
        with Path(app.engine.roots[0]).open("ab") as out:  # a new trace starts in the file
            out.write(TraceBuilder().lines[0] + b"\n")
        while app.engine.version == version:  # read, but not shown (the test's own timeout)
            await pilot.pause(0.05)
        assert app.redraws == before and "1 trace," in _text(app, "#status")
        await pilot.press("p")
        assert not app.paused and app.redraws > before

    _run(tmp_path, check)


def test_slowest_then_enter_opens_a_message_as_escaped_json(tmp_path: Path) -> None:
    async def check(app: WatchApp, pilot: Pilot[None]) -> None:
        await pilot.press("s")
        await pilot.pause(0.1)
        assert app.selected is not None and app.selected[1] == HOSTILE
        table = app.query_one("#timeline", DataTable)
        table.focus()
        request = next(i for i, r in enumerate(app.shown_rows) if r.label == "session/resume")
        table.move_cursor(row=request)
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, TextScreen)
        body = _text(app, "#text-body")
        assert '"method": "session/resume"' in body
        assert "\\u001b]0;pwned\\u0007[bold red]x[/]" in body and "\x1b" not in body

    _run(tmp_path, check)
