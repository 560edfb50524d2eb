"""What the watch screen shows, as rich `Text` (never markup: trace text is escaped for the
terminal and then taken literally, so neither a control sequence nor `[bold]` in a session id
does anything): the connection list, the replay in progress, the finished replays, a session's
timeline and one message as pretty JSON. Pure functions of the engine's state."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

from rich.text import Text

from acp_trace.jsonrpc import loads
from acp_trace.quantities import count, counted, fixed, size
from acp_trace.render.escape import terminal, terminal_lines
from acp_trace.render.gap_source import gap_start
from acp_trace.watch.engine import Engine
from acp_trace.watch.live import Replay, Row, Session, Trace

REPLAYS_SHOWN = 30  # rows of the replays table: the newest, then the slowest of the rest
DONE_STYLE = {"complete": "green", "v1_loaded": "green", "rejected": "yellow"}


def t(text: object, style: str = "") -> Text:
    """A cell: trace text escaped, shown as it is."""
    return Text(terminal(str(text)), style=style, no_wrap=True, overflow="ellipsis")


def seconds(ms: float | None) -> str:
    """`-`, `451 ms`, `1.36 s`, `1,234.57 s`."""
    if ms is None:
        return "-"
    return f"{fixed(ms / 1000, 2)} s" if abs(ms) >= 1000 else f"{fixed(ms, 0)} ms"


@dataclass
class Filter:
    """What the screen shows: rows whose method or update kind contains `text`, sessions
    whose id contains `session`, and with `findings`, only replays and sessions with findings."""

    text: str = ""
    session: str = ""
    findings: bool = False

    def describe(self) -> str:
        parts = [f"rows ~ {self.text}"] * bool(self.text)
        parts += [f"session ~ {self.session}"] * bool(self.session)
        parts += ["findings only"] * self.findings
        return ", ".join(parts)


def trace_state(engine: Engine, trace: Trace) -> str:
    if trace.ended is not None:
        code, sig = trace.ended.get("code"), trace.ended.get("signal")
        how = f"signal {sig}" if sig is not None else f"exit {code}"
        extra = [counted(len(trace.errors), "error")] * bool(trace.errors)
        extra += [f"{count(trace.dropped)} dropped"] * bool(trace.dropped)
        extra += [f"{count(trace.malformed)} malformed"] * bool(trace.malformed)
        return ", ".join([how, *extra])
    return "quiet" if engine.quiet(trace.name) else "live"


def session_rows(engine: Engine, flt: Filter) -> Iterator[tuple[str, list[Text]]]:
    """The connection list: a row per trace, then one per session (key, cells)."""
    with_findings = {(f["trace"], f["session"]) for f in engine.findings}
    for number, trace in enumerate(engine.live.traces.values(), 1):
        proto = "-" if trace.protocol is None else f"v{trace.protocol}"
        agent = f"#{number} {trace.agent}" + (f" {trace.version}" if trace.version else "")
        state = trace_state(engine, trace)
        yield trace.name, [t(agent, "bold"), t(proto), t(state, "green" if state == "live" else "")]
        for s in trace.sessions.values():
            if flt.session and flt.session not in s.id:
                continue
            if flt.findings and (trace.name, s.id) not in with_findings:
                continue
            updates = count(sum(s.counts.values()))
            flag = " !" if (trace.name, s.id) in with_findings else ""
            yield f"{trace.name}\0{s.id}", [t(f"  {s.id}{flag}"), t(f"{updates} upd"), t(s.state)]


Selected = tuple[str, str, str | None]  # (trace, session or "" for the connection, request id)


def current_replay(engine: Engine, selected: Selected | None) -> Replay | None:
    """The replay at the centre: the one selected (a row of the replays table, `s`), else the
    selected session's latest, else the selected connection's latest, else the newest in
    progress, else the newest of all."""
    replays = engine.live.replays
    if selected is not None:
        trace, session, request = selected
        if request is not None:
            chosen = replays.get((trace, request, session))
            if chosen is not None:
                return chosen
        mine = [r for r in replays.values() if r.trace == trace and session in ("", r.session)]
        if mine or trace in engine.live.traces:
            return mine[-1] if mine else None
    running = [r for r in replays.values() if r.outcome is None]
    pool = running or list(replays.values())
    return pool[-1] if pool else None


def focus(
    engine: Engine, selected: Selected | None
) -> tuple[Replay | None, Trace | None, Session | None]:
    """What the screen is about: the replay at the centre, and the connection and session
    whose timeline is shown under it (the replay's own, so that the two always agree)."""
    replay = current_replay(engine, selected)
    traces = engine.live.traces
    if replay is not None and replay.trace in traces:
        trace = traces[replay.trace]
        return replay, trace, trace.sessions.get(replay.session)
    if selected is not None and selected[0] in traces:
        trace = traces[selected[0]]
    elif traces:
        trace = next(reversed(traces.values()))
    else:
        return None, None, None
    session = trace.sessions.get(selected[1]) if selected and selected[0] == trace.name else None
    return replay, trace, session or next(reversed(trace.sessions.values()), None)


def replay_panel(engine: Engine, replay: Replay | None, now: float | None = None) -> Text:
    """The replay in progress: elapsed, history so far, the marker, the gap growing live;
    then its outcome, gap, largest phase and findings once decided."""
    if replay is None:
        return Text("No replay yet: waiting for a session/resume with a cursor or a session/load.")
    trace = engine.live.traces.get(replay.trace)
    now = time.time() if now is None else now
    start = trace.wall(replay.t_req) if trace else None
    out = Text()
    out.append(f"{replay.method} ", "bold")
    out.append(terminal(replay.session), "bold cyan")
    out.append(f"  (id {terminal(replay.request_id)}, {terminal(trace.agent if trace else '?')})\n")
    end = replay.t_response
    if end is None:
        elapsed = None if start is None else (now - start) * 1000
        out.append(f"elapsed   {seconds(elapsed)} since the request\n")
    else:
        out.append(f"response  at {seconds((end - replay.t_req) / 1e6)}\n")
    out.append(f"history   {counted(replay.updates, 'update')}, {size(replay.bytes)}\n")
    if replay.t_marker is not None:
        out.append(f"marker    at {seconds((replay.t_marker - replay.t_req) / 1e6)}\n")
    else:
        out.append("marker    not yet\n" if end is None else "marker    none\n")
    if replay.t_vendor is not None:  # never called a marker (rules.md)
        at = seconds((replay.t_vendor - replay.t_req) / 1e6)
        out.append(f"vendor    {terminal(replay.vendor or '?')} at {at}\n")
    since, source = replay.gap_start()
    what = GAP_FROM.get(source or "", f"vendor event {terminal(replay.vendor or '?')}")
    if end is None and since is not None and trace is not None:
        wall = trace.wall(since)
        gap = None if wall is None else (now - wall) * 1000
        out.append(f"gap       {seconds(gap)} since the {what}, growing\n", "bold yellow")
    elif replay.outcome is None and end is not None:
        out.append("outcome   deciding...\n")
    if replay.outcome is not None:
        style = DONE_STYLE.get(replay.outcome, "bold red")
        out.append("outcome   ")
        out.append(replay.outcome, style)
        out.append(f"   gap {seconds(replay.gap_ms)}")
        if replay.gap_source:
            out.append(f" from the {terminal(gap_start(replay.gap_source))}")
        if replay.phase:
            out.append(f"   largest phase {terminal(replay.phase)}")
        out.append("\n")
    if replay.findings:
        out.append("findings  " + ", ".join(sorted(set(replay.findings))) + "\n", "bold red")
    return out


GAP_FROM = {"marker": "marker", "last_history": "last history update"}


def replay_rows(
    engine: Engine, flt: Filter, limit: int = REPLAYS_SHOWN
) -> Iterator[tuple[str, list[Text]]]:
    """The finished (and running) replays, newest first: the newest `limit` that pass the
    filter, then the slowest of the others (`g` jumps to it). A redraw costs the same at the
    thousandth replay as at the tenth."""
    chosen: list[Replay] = []
    slowest: Replay | None = None
    for r in reversed(engine.live.replays.values()):
        if flt.findings and not r.findings:
            continue
        if flt.session and flt.session not in r.session:
            continue
        if len(chosen) < limit:
            chosen.append(r)
        elif r.gap_ms is not None and (slowest is None or r.gap_ms > (slowest.gap_ms or 0.0)):
            slowest = r
    if slowest is not None and slowest.gap_ms is not None:
        shown = [c.gap_ms for c in chosen if c.gap_ms is not None]
        if not shown or slowest.gap_ms > max(shown):
            chosen.append(slowest)
    numbers = {name: i for i, name in enumerate(engine.live.traces, 1)}
    for r in chosen:
        outcome = r.outcome or ("running" if r.t_response is None else "deciding")
        style = DONE_STYLE.get(outcome, "" if r.outcome is None else "red")
        cells = [t(f"#{numbers.get(r.trace, '?')}"), t(r.request_id), t(r.session)]
        cells += [t(outcome, style), t(seconds(r.gap_ms)), t(count(r.updates)), t(r.phase or "-")]
        cells += [t(", ".join(sorted(set(r.findings))) or "-", "red")]
        yield f"{r.trace}\0{r.request_id}\0{r.session}", cells


TIMELINE_STYLE = {"marker": "bold green", "error": "red", "stderr": "dim", "tap": "magenta"}


class RowCells:
    """The cells of each timeline row, made once and made again only when the row changed
    (a group of updates that grew): a redraw then costs a look-up per row, and a cell that
    did not change is the same `Text`, which the table does not paint again. Holds the rows
    of the last call only (bounded by what the timeline shows)."""

    def __init__(self) -> None:
        self.made: dict[int, tuple[Row, tuple[object, ...], list[Text]]] = {}
        self.built = 0  # rows whose cells were made (a test's figure)

    def __call__(self, rows: list[Row]) -> list[tuple[Row, list[Text]]]:
        made, out = {}, []
        for row in rows:
            sig = (row.count, row.latency_ms, row.phase)
            hit = self.made.get(id(row))
            if hit is None or hit[0] is not row or hit[1] != sig:
                hit = (row, sig, _row_cells(row))
                self.built += 1
            made[id(row)] = hit
            out.append((row, hit[2]))
        self.made = made
        return out


def _row_cells(row: Row) -> list[Text]:
    when = "-" if row.t_ns is None else fixed(row.t_ns / 1e9, 3)
    extra = f"{seconds(row.latency_ms)}" if row.latency_ms is not None else ""
    if row.kind == "updates" and row.count > 1:
        extra = f"x{count(row.count)}"
    if row.phase:
        extra = f"phase {terminal(row.phase)}"
    label = row.label if row.kind != "stderr" else row.label[:400]
    return [t(when), t(row.kind, TIMELINE_STYLE.get(row.kind, "")), t(label), t(extra)]


def fit(lead: str, items: list[str], width: int) -> str:
    """`lead` and as many whole `items` as fit in `width` columns, then how many did not
    (no value is ever cut: Enter on the session's row lists them all)."""
    out = lead
    for i, item in enumerate(items):
        more = f" (+{count(len(items) - i)} more)"
        room = width - (len(f" (+{count(len(items) - i - 1)} more)") if i < len(items) - 1 else 0)
        if len(out) + 3 + len(item) > room:
            return out + more
        out += ("   " if i == 0 else ", ") + item
    return out


def timeline_rows(
    trace: Trace,
    session: Session | None,
    flt: Filter,
    limit: int = 300,
    cells: RowCells | None = None,
) -> tuple[list[str], list[tuple[Row, list[Text]]]]:
    """A session's timeline, merged with its connection's own rows (stderr, tap events,
    initialize), newest last (the newest `limit`); the head's items say how many older rows
    were folded into counts, then the session's updates by kind. `cells` keeps the cells of
    rows made before."""
    rows = list(trace.stderr.rows) + (list(session.rows) if session else [])
    rows.sort(key=lambda r: (r.seq is None, r.seq or 0))
    if flt.text:
        rows = [r for r in rows if flt.text in r.label or flt.text in r.kind]
    folded = sum(trace.stderr.folded.values()) + (sum(session.folded.values()) if session else 0)
    head = [f"{counted(folded, 'older row')} folded into the counts"] if folded else []
    counts = session.counts if session else None
    if counts:
        head += [f"{terminal(k)} {count(n)}" for k, n in counts.most_common()]
    shown = rows[-limit:] if limit else []
    return head, (cells or RowCells())(shown)


def message_text(row: Row) -> Text:
    """One recorded line as pretty JSON, every string escaped for the terminal."""
    if row.raw is None:
        if row.kind in ("stderr", "tap"):
            return Text(terminal_lines(row.label))
        return Text("This message is not kept (too large, or an older row folded into counts).")
    try:
        value = loads(row.raw)
        if isinstance(value, dict) and "msg" in value:
            value = value["msg"]  # the message, as sent (the record around it is in the title)
        pretty = json.dumps(value, indent=2, ensure_ascii=False)
    except ValueError:
        pretty = row.raw.decode("utf-8", "replace")
    return Text(terminal_lines(pretty))


HELP = """Keys
  ?        this help              q        quit
  /        filter rows by method or update kind (empty: all)
  @        filter sessions by id (empty: all)
  f        findings only (replays and sessions with findings)
  p        pause / resume the screen (the files are still read)
  s        jump to the slowest replay (the largest gap)
  enter    open the selected timeline row as pretty JSON; on a connection,
           a session or a replay: its counts
  tab      move between the lists
Escape closes this and every other window."""
