"""The watch screen under Textual's own harness (App.run_test, the Pilot): the replay at the
centre, the keys (help, filters, findings only, pause, slowest, a message as JSON), and trace
text shown escaped, never as terminal control or rich markup."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from acp_trace.watch.engine import Engine
from acp_trace.watch.screen import AskScreen, TextScreen, WatchApp
from testpaths import SAMPLES
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


def _run_app(
    app: WatchApp,
    test: Callable[[WatchApp, Pilot[None]], Awaitable[None]],
    ready: Callable[[WatchApp], bool] | None = None,
) -> None:
    """Run the screen headless until `ready` (default: every trace read, decided and drawn)."""

    def decided(app: WatchApp) -> bool:
        return app.engine.all_ended() and app.drawn == app.engine.version

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            deadline = time.monotonic() + 300  # a hang guard only
            while not (ready or decided)(app):
                assert time.monotonic() < deadline, "the screen never got ready"
                await pilot.pause(0.05)
            await pilot.pause(0.1)
            await test(app, pilot)

    asyncio.run(main())


def _one_session_three_replays(path: Path) -> Path:
    """One session resumed three times, the second the slowest; one history update each."""
    b = TraceBuilder(agent="demo-agent", version="9.9")
    for gap in (100, 900, 200):
        rid = b.resume("same")
        text = [{"type": "text", "text": "hi"}]
        b.update("same", "user_message", content=text, messageId=f"m{gap}")
        b.marker("same")
        b.response(rid, {}, dt=gap)
    b.event("exit", code=0, signal=None)
    stream = {"lines": 9, "recorded": 9, "dropped": 0, "unwritten": 0, "bytes": 999}
    b.event("account", streams={"client": stream, "agent": stream}, by="writer")
    return b.write(path)


def test_replays_are_told_apart_and_s_shows_the_slowest_itself(tmp_path: Path) -> None:
    """Three replays of one session are three different rows (request id, trace); `s` puts
    the slowest replay itself at the centre, not its session's latest; one update is
    `1 update`."""
    app = WatchApp(Engine([str(_one_session_three_replays(tmp_path / "t.jsonl"))]), tick=0.05)

    async def check(app: WatchApp, pilot: Pilot[None]) -> None:
        table = app.query_one("#replays", DataTable)
        rows = [tuple(str(c) for c in table.get_row_at(r)) for r in range(table.row_count)]
        assert len(rows) == 3 and len(set(rows)) == 3
        assert {r[1] for r in rows} == {"2", "3", "4"} and {r[0] for r in rows} == {"#1"}
        assert _cells(app, "#sessions")[0] == "#1 demo-agent 9.9"
        await pilot.press("s")
        await pilot.pause(0.2)
        panel = _text(app, "#replay")
        assert "(id 3, demo-agent)" in panel and "gap 900 ms" in panel, panel
        assert "history   1 update, " in panel

    _run_app(app, check)


def test_a_vendor_event_is_named_as_replays_names_it(tmp_path: Path) -> None:
    """claude-agent-acp's jetbrains.air.loadReplayEnd is shown as the vendor event, and the gap
    as measured from `vendor:jetbrains.air.loadReplayEnd` (the gap_source of `replays`)."""
    sample = SAMPLES / "claude-agent-acp-v2-resume-air.jsonl"
    app = WatchApp(Engine([str(shutil.copy(sample, tmp_path / sample.name))]), tick=0.05)

    async def check(app: WatchApp, pilot: Pilot[None]) -> None:
        panel = _text(app, "#replay")
        assert "vendor    jetbrains.air.loadReplayEnd at 4.31 s" in panel, panel
        assert (
            "outcome   unmarked   gap 5.44 s from the vendor event jetbrains.air.loadReplayEnd"
            in panel
        )

    _run_app(app, check)


def test_values_are_never_shown_cut(tmp_path: Path) -> None:
    """A replay shown running, then decided: its outcome and gap widen their columns
    (`unmarked`, not `unmark…`; `301 ms`, not `3…`)."""
    b = TraceBuilder(agent="demo-agent", version="9.9")
    rid = b.resume("s1")
    b.history("s1", 2)
    cut = len(b.lines)
    b.response(rid, {}, dt=300)
    b.event("exit", code=0, signal=None)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in b.lines[:cut]))
    app = WatchApp(Engine([str(path)]), tick=0.05)

    def running(app: WatchApp) -> bool:
        return "running" in _cells(app, "#replays")

    async def grow(app: WatchApp, pilot: Pilot[None]) -> None:
        with path.open("ab") as out:
            out.write(b"".join(line + b"\n" for line in b.lines[cut:]))
        deadline = time.monotonic() + 300  # a hang guard only
        while "unmarked" not in _cells(app, "#replays"):
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        table = app.query_one("#replays", DataTable)
        widths = [column.content_width for column in table.columns.values()]
        for r in range(table.row_count):
            for cell, width in zip(table.get_row_at(r), widths, strict=True):
                assert cell.cell_len <= width, (str(cell), width)

    _run_app(app, grow, running)


def test_the_timeline_is_the_centre_replays_session(tmp_path: Path) -> None:
    """With nothing selected, the timeline under the replay at the centre is that replay's
    session's, not the newest connection's (which has no replay)."""
    folder = tmp_path / "traces"
    folder.mkdir()
    a = TraceBuilder(agent="agent-a", version="1")
    rid = a.resume("replayed")
    a.history("replayed", 1)
    a.marker("replayed")
    a.response(rid, {}, dt=10)
    a.event("exit", code=0, signal=None)
    a.write(folder / "a.jsonl")
    b = TraceBuilder(agent="agent-b", version="1")
    new = b.request("session/new", {"cwd": "/tmp", "mcpServers": []})
    b.response(new, {"sessionId": "fresh"})
    b.event("exit", code=0, signal=None)
    b.write(folder / "b.jsonl")
    app = WatchApp(Engine([str(folder / "a.jsonl"), str(folder / "b.jsonl")]), tick=0.05)

    async def check(app: WatchApp, pilot: Pilot[None]) -> None:
        assert "session/resume replayed" in _text(app, "#replay")
        assert _text(app, "#head").startswith("agent-a: replayed")

    _run_app(app, check)


def test_enter_on_a_connection_or_a_session_shows_its_counts(tmp_path: Path) -> None:
    """Enter on a connection's row lists its records, sessions and replays; on a session's
    row its updates by kind; on the tap's `account` row in the timeline, its counts."""
    app = WatchApp(Engine([str(_one_session_three_replays(tmp_path / "t.jsonl"))]), tick=0.05)

    async def check(app: WatchApp, pilot: Pilot[None]) -> None:
        table = app.query_one("#sessions", DataTable)
        table.focus()
        table.move_cursor(row=0)
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, TextScreen)
        body = _text(app, "#text-body")
        assert "replays          3" in body and "sessions         1" in body, body
        await pilot.press("escape")
        table.move_cursor(row=1)
        await pilot.press("enter")
        await pilot.pause(0.1)
        body = _text(app, "#text-body")
        assert "user_message     3" in body and "replay_complete  3" in body, body
        await pilot.press("escape")
        timeline = app.query_one("#timeline", DataTable)
        timeline.focus()
        timeline.move_cursor(row=[r.label for r in app.shown_rows].index("account"))
        await pilot.press("enter")
        await pilot.pause(0.1)
        body = _text(app, "#text-body")
        assert '"recorded": 9' in body and '"by": "writer"' in body, body

    _run_app(app, check)


def test_older_traces_passed_over_are_said(tmp_path: Path) -> None:
    """A folder whose traces are all older than 10 minutes: the status line says how many
    were passed over and how to read one (not `0 traces` and nothing else)."""
    folder = tmp_path / "traces"
    folder.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        _one_session_three_replays(folder / name)
        os.utime(folder / name, (time.time() - 3600, time.time() - 3600))
    app = WatchApp(Engine([str(folder)]), tick=0.05)

    async def check(app: WatchApp, pilot: Pilot[None]) -> None:
        status = _text(app, "#status")
        assert "0 traces, 0 sessions, 0 findings" in status
        assert "2 older traces passed over (not modified in the 10 minutes before" in status

    _run_app(app, check, lambda app: app.engine.folder.scans > 0 and app.redraws > 0)
