"""The watch screen (Textual): connections and sessions on the left, the replay in progress at
the centre, the replays below it, the selected session's live timeline at the bottom.

Every `TICK` seconds the engine reads what the files gained and the views are redrawn from
its state (`watch.views`), unless paused; the analyzer runs on its own cadence, in a thread
of its own, started and collected by `Engine.step`. A redraw changes only what changed (the
tables through `watch.tables`, a text only when it differs, without a layout pass: every
box has a fixed size), so Textual repaints only those cells. Every cell is rich `Text` built from escaped trace text: nothing is markup.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import threading
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Static

from acp_trace.quantities import counted
from acp_trace.render.escape import terminal
from acp_trace.watch import views
from acp_trace.watch.details import details
from acp_trace.watch.engine import Engine
from acp_trace.watch.live import Row
from acp_trace.watch.tables import LiveTable, Synced, same_text

TICK = 0.1  # seconds between two reads of the files and redraws
HANGUP_GRACE = 5.0  # seconds the screen may take to give the terminal back after SIGHUP
TIMELINE_ROWS = 300  # the newest rows of a timeline the table holds, at least (when there are)
TIMELINE_SLACK = 100  # rows it takes on before its oldest go, all at once (not one a row)


class TextScreen(ModalScreen[None]):
    """A window of text (the help, one message): Escape or q closes it."""

    BINDINGS: ClassVar[list[Any]] = [
        Binding("escape", "dismiss", "close"),
        Binding("q", "dismiss", "close"),
    ]

    def __init__(self, text: Text, title: str) -> None:
        super().__init__()
        self.text, self.title_text = text, title

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="text-window"):
            yield Static(Text(self.title_text, style="bold"))
            yield Static(self.text, id="text-body")

    async def action_dismiss(self, result: Any = None) -> None:
        self.dismiss(None)


class AskScreen(ModalScreen[str | None]):
    """One line of input (a filter); Enter gives it, Escape keeps the old one."""

    BINDINGS: ClassVar[list[Any]] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, prompt: str, value: str) -> None:
        super().__init__()
        self.prompt, self.value = prompt, value

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Static(Text(self.prompt))
            yield Input(value=self.value, id="ask-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class WatchApp(App[None]):
    """`acp-trace watch` on a terminal."""

    TITLE = "acp-trace watch"
    CSS = """
    #left { width: 50; }
    #sessions { height: 1fr; }
    #replay { height: 9; border: round $accent; padding: 0 1; }
    #replays { height: 8; }
    #head { height: 1; color: $text-muted; }
    #status { height: 1; background: $boost; }
    #timeline { height: 1fr; }
    #text-window { width: 90%; height: 90%; border: round $accent; background: $surface; }
    #ask { width: 60; height: 5; border: round $accent; background: $surface; }
    TextScreen, AskScreen { align: center middle; }
    """
    BINDINGS: ClassVar[list[Any]] = [
        Binding("question_mark", "help", "keys"),
        Binding("slash", "filter_rows", "filter"),
        Binding("at", "filter_sessions", "session"),
        Binding("f", "findings_only", "findings"),
        Binding("p", "pause", "pause"),
        Binding("s", "slowest", "slowest"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, engine: Engine, tick: float = TICK) -> None:
        super().__init__()
        self.engine, self.tick = engine, tick
        self.flt = views.Filter()
        self.paused = False
        self.w_status = self.w_replay = self.w_head = Static()
        self.tables: dict[str, DataTable[Any]] = {}
        self.synced: dict[str, Synced] = {}
        self.texts: dict[int, Text] = {}  # what each Static shows (by id), to skip a same one
        self.selected: views.Selected | None = None  # (trace, session, request id)
        self.shown_rows: list[Row] = []
        self.row_cells = views.RowCells()
        self.redraws = 0
        self.drawn = -1  # the engine version the lists show
        self.centre: object = None  # the replay at the centre when the lists were drawn
        self.stopped_by: int | None = None  # the signal that ended the screen

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with Horizontal():
            with Vertical(id="left"):
                yield LiveTable(id="sessions", cursor_type="row", zebra_stripes=True)
            with Vertical():
                yield Static(id="replay")
                yield LiveTable(id="replays", cursor_type="row")
                yield Static(id="head")
                yield LiveTable(id="timeline", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self.stop, signum)
        loop.add_signal_handler(signal.SIGHUP, self.hang_up)
        main = self.screen  # the main screen's widgets, whatever window is on top later
        self.w_status = main.query_one("#status", Static)
        self.w_replay = main.query_one("#replay", Static)
        self.w_head = main.query_one("#head", Static)
        self.tables = {
            k: main.query_one(f"#{k}", DataTable) for k in ("sessions", "replays", "timeline")
        }
        self.synced = {k: Synced(table) for k, table in self.tables.items()}
        self.query_one("#sessions", DataTable).add_columns("connection / session", "", "state")
        self.query_one("#replays", DataTable).add_columns(
            "#", "id", "session", "outcome", "gap", "history", "phase", "findings"
        )
        self.query_one("#timeline", DataTable).add_columns("t (s)", "kind", "what", "")
        self.set_interval(self.tick, self.step)
        self.step()
        # what is loaded by now (polars, Textual, the rules) stays to the end: the garbage
        # collector's full passes, which pause the screen, no longer walk through all of it
        gc.freeze()

    def stop(self, signum: int) -> None:
        """A signal ends the screen as it ends every command (`acp-trace watch` exits
        128 + N, saying which): Textual gives the terminal back first (its main screen, no
        mouse tracking, the cursor shown)."""
        self.stopped_by = signum
        self.exit(return_code=128 + signum)

    def hang_up(self) -> None:
        """SIGHUP: a terminal still there (`kill -HUP`, a multiplexer) is given back as on
        SIGTERM, within a few seconds; a closed one has nothing to give back: exit at once."""
        if not _terminal_alive():
            os._exit(128 + signal.SIGHUP)
        guard = threading.Timer(HANGUP_GRACE, os._exit, (128 + signal.SIGHUP,))
        guard.daemon = True
        guard.start()
        self.stop(signal.SIGHUP)

    def step(self) -> None:
        """Read the files, let the analyzer decide, redraw (unless paused). Ends when the
        terminal has gone away (a closed window whose hangup did not reach us)."""
        if not self.is_headless and not _terminal_alive():
            os._exit(128 + signal.SIGHUP)  # as if its hangup had come
        self.engine.step()
        if not self.paused:
            self.redraw(force=False)

    def redraw(self, *, force: bool = True) -> None:
        """The status and the replay at the centre (its clocks run) every tick; the lists
        when something changed."""
        self._status()
        replay = views.current_replay(self.engine, self.selected)
        self._show(self.w_replay, views.replay_panel(self.engine, replay))
        if replay is not self.centre:  # the timeline under it is that replay's session's
            self.centre, force = replay, True
        if not force and self.engine.version == self.drawn:
            return
        self.redraws += 1
        self.drawn = self.engine.version
        self._fill("#sessions", list(views.session_rows(self.engine, self.flt)))
        self._fill("#replays", list(views.replay_rows(self.engine, self.flt)))
        self._timeline()

    def _status(self) -> None:
        e = self.engine
        sessions = sum(len(tr.sessions) for tr in e.live.traces.values())
        text = (
            f" {counted(len(e.live.traces), 'trace')}, {counted(sessions, 'session')}, "
            f"{counted(e.finding_count, 'finding')}"
        )
        if e.folder.passed:  # said, never silent: a folder of old traces is not empty
            minutes = f"{(e.recent or 0) / 60:g}"
            text += (
                f"  |  {counted(e.folder.passed, 'older trace')} passed over (not modified "
                f"in the {minutes} minutes before; name one to read it)"
            )
        if self.flt.describe():
            text += f"  |  filter: {self.flt.describe()}"
        if self.paused:
            text += "  |  PAUSED (p resumes)"
        if e.errors:
            text += f"  |  {e.errors[-1]}"
        self._show(self.w_status, views.t(text + "  |  ? keys"))

    def _show(self, widget: Static, text: Text) -> None:
        """A new text in a box of fixed size: painted only when it differs, with no layout."""
        if same_text(self.texts.get(id(widget)), text):
            return
        self.texts[id(widget)] = text
        widget.update(text, layout=False)

    def _fill(self, selector: str, rows: list[tuple[str, list[Text]]]) -> None:
        """Bring a table to these rows, keeping the cursor on the same key when it is still
        there."""
        name = selector.lstrip("#")
        table = self.tables[name]
        keep = self._cursor_key(table)
        self.synced[name].sync(rows)
        keys = [key for key, _ in rows]
        if keep in keys and keys.index(keep) != table.cursor_row:
            table.move_cursor(row=keys.index(keep), animate=False)

    def _cursor_key(self, table: DataTable[Any]) -> str | None:
        if table.row_count == 0:
            return None
        try:
            return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        except Exception:
            return None

    def _timeline(self) -> None:
        _replay, trace, session = views.focus(self.engine, self.selected)
        if trace is None:
            return
        head, rows = views.timeline_rows(
            trace, session, self.flt, TIMELINE_ROWS + TIMELINE_SLACK, self.row_cells
        )
        rows = rows[_window(self.shown_rows, [row for row, _ in rows]) :]
        who = f"{trace.agent}: {session.id if session else '(no session yet)'}"
        width = self.w_head.size.width or 80
        self._show(self.w_head, views.t(views.fit(who, head, width)))
        table = self.tables["timeline"]
        at_end = not table.has_focus or table.cursor_row >= table.row_count - 1
        was = (
            self.shown_rows[table.cursor_row]
            if 0 <= table.cursor_row < len(self.shown_rows)
            else None
        )
        self.synced["timeline"].sync([(str(id(row)), cells) for row, cells in rows])
        self.shown_rows = [row for row, _ in rows]
        if rows and (at_end or was is None):
            if table.cursor_row != len(rows) - 1:
                table.move_cursor(row=len(rows) - 1, animate=False)
        elif was is not None and was in self.shown_rows:  # the row the reader is on stays
            index = self.shown_rows.index(was)
            if table.cursor_row != index:
                table.move_cursor(row=index, animate=False)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if not event.data_table.has_focus:  # a redraw moving the cursor back
            return
        selected = _selection(event.data_table.id, event.row_key.value)
        if selected is not None:
            self.selected = selected
            self.redraw()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter: a timeline row's message as JSON; a connection's, a session's or a
        replay's counts."""
        if event.data_table.id == "timeline" and 0 <= event.cursor_row < len(self.shown_rows):
            row = self.shown_rows[event.cursor_row]
            title = f"seq {row.seq}  {row.kind}  {terminal(row.label)}"
            self.push_screen(TextScreen(views.message_text(row), title))
            return
        selected = _selection(event.data_table.id, event.row_key.value)
        shown = None if selected is None else details(self.engine, selected)
        if shown is not None:
            self.push_screen(TextScreen(shown[1], shown[0]))

    def action_help(self) -> None:
        self.push_screen(TextScreen(Text(views.HELP), "acp-trace watch"))

    def action_filter_rows(self) -> None:
        def done(value: str | None) -> None:
            if value is not None:
                self.flt.text = value.strip()
                self.redraw()

        self.push_screen(
            AskScreen("Rows whose method or update kind contains:", self.flt.text), done
        )

    def action_filter_sessions(self) -> None:
        def done(value: str | None) -> None:
            if value is not None:
                self.flt.session = value.strip()
                self.redraw()

        self.push_screen(AskScreen("Sessions whose id contains:", self.flt.session), done)

    def action_findings_only(self) -> None:
        self.flt.findings = not self.flt.findings
        self.redraw()

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.redraw() if not self.paused else self._status()

    def action_slowest(self) -> None:
        """Select the replay with the largest gap, and its session."""
        done = [r for r in self.engine.live.replays.values() if r.gap_ms is not None]
        if not done:
            self.notify("No replay has a gap yet.")
            return
        slow = max(done, key=lambda r: r.gap_ms or 0.0)
        self.selected = (slow.trace, slow.session, slow.request_id)
        self.flt.session = ""
        self.redraw()
        table = self.tables["replays"]
        key = f"{slow.trace}\0{slow.request_id}\0{slow.session}"
        keys = [k for k, _ in views.replay_rows(self.engine, self.flt)]
        if key in keys:
            table.move_cursor(row=keys.index(key), animate=False)
        table.focus()


def _selection(table: str | None, key: object) -> views.Selected | None:
    """What a row of the sessions or the replays table selects."""
    if not key or table not in ("sessions", "replays"):
        return None
    parts = str(key).split("\0")
    if table == "replays":
        return parts[0], parts[2], parts[1]
    return parts[0], parts[1] if len(parts) == 2 else "", None


def _window(shown: list[Row], rows: list[Row]) -> int:
    """Where the timeline starts in `rows` (the newest TIMELINE_ROWS + TIMELINE_SLACK): at
    the row it starts at now while that is among them, else at the newest TIMELINE_ROWS. So the
    table drops its oldest rows a hundred at a time, not one at every new row (each drop
    moves every row below it, and the table paints them all again)."""
    if shown:
        first = shown[0]
        for i, row in enumerate(rows):
            if row is first:
                return i
    return max(0, len(rows) - TIMELINE_ROWS)


def _terminal_alive() -> bool:
    """The terminal the screen is drawn on is still there (a hung-up one fails tcgetattr)."""
    stream = sys.__stderr__ if sys.__stderr__ is not None else sys.__stdout__
    try:
        return stream is not None and os.isatty(stream.fileno())
    except (OSError, ValueError):
        return False
