"""What Enter opens on a row of the watch screen's lists: a connection's, a session's or a
replay's counts, as rich `Text` (trace text escaped for the terminal, taken literally)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from acp_trace.quantities import count, counted, size
from acp_trace.render.escape import terminal
from acp_trace.render.gap_source import gap_start
from acp_trace.watch.engine import Engine
from acp_trace.watch.live import Replay, Session, Trace
from acp_trace.watch.views import Selected, seconds, trace_state


def details(engine: Engine, selected: Selected) -> tuple[str, Text] | None:
    """Enter on a row of the lists: a connection's, a session's or a replay's counts, as a
    window's title and text (None when the row is gone)."""
    trace = engine.live.traces.get(selected[0])
    if trace is None:
        return None
    name, session, request = selected
    if request is not None:
        replay = engine.live.replays.get((name, request, session))
        return None if replay is None else (f"replay {terminal(request)}", replay_text(replay))
    if session:
        s = trace.sessions.get(session)
        return None if s is None else (f"session {terminal(session)}", session_text(engine, s))
    return f"connection {terminal(Path(name).name)}", connection_text(engine, trace)


def _lines(pairs: list[tuple[str, str]]) -> Text:
    width = max(len(k) for k, _ in pairs)
    return Text("\n".join(f"{k.ljust(width)}  {terminal(v)}" for k, v in pairs))


def connection_text(engine: Engine, trace: Trace) -> Text:
    replays = [r for r in engine.live.replays.values() if r.trace == trace.name]
    findings = sum(1 for f in engine.findings if f["trace"] == trace.name)
    pairs = [
        ("trace", trace.name),
        ("agent", trace.agent + (f" {trace.version}" if trace.version else "")),
        ("protocol", "-" if trace.protocol is None else f"v{trace.protocol}"),
        ("state", trace_state(engine, trace)),
        ("records", count(trace.records)),
        ("sessions", count(len(trace.sessions))),
        ("replays", count(len(replays))),
        ("findings", count(findings)),
        ("malformed lines", count(trace.malformed)),
        ("dropped records", count(trace.dropped)),
        ("recorder errors", "; ".join(trace.errors) or "none"),
    ]
    return _lines(pairs)


def session_text(engine: Engine, s: Session) -> Text:
    replays = [r for r in engine.live.replays.values() if (r.trace, r.session) == (s.trace, s.id)]
    rules = [f["rule"] for f in engine.findings if (f["trace"], f["session"]) == (s.trace, s.id)]
    pairs = [
        ("state", s.state),
        ("updates", count(sum(s.counts.values()))),
        *((f"  {kind}", count(n)) for kind, n in s.counts.most_common()),
        ("replays", count(len(replays))),
        ("findings", ", ".join(sorted(set(rules))) or "none"),
        ("rows folded", count(sum(s.folded.values()))),
    ]
    return _lines(pairs)


def replay_text(r: Replay) -> Text:
    def at(t: int | None) -> str:
        return "-" if t is None else f"{seconds((t - r.t_req) / 1e6)} after the request"

    pairs = [
        ("method", r.method),
        ("session", r.session),
        ("trace", r.trace),
        ("outcome", r.outcome or ("running" if r.t_response is None else "deciding")),
        (
            "gap",
            seconds(r.gap_ms) + (f" from the {gap_start(r.gap_source)}" if r.gap_source else ""),
        ),
        ("history", f"{counted(r.updates, 'update')}, {size(r.bytes)}"),
        ("marker", at(r.t_marker)),
        ("vendor event", "-" if r.vendor is None else f"{r.vendor} at {at(r.t_vendor)}"),
        ("last history", at(r.t_last_history)),
        ("response", at(r.t_response)),
        ("largest phase", r.phase or "-"),
        ("findings", ", ".join(sorted(set(r.findings))) or "none"),
    ]
    return _lines(pairs)
