"""Credentials in free text in what `export`, `report` and `mock` write, for traces recorded
before the recorder found them (redaction/records.py, mock/scrub.py), and charts that cannot be
drawn or are fed hostile labels (render/plots/_fit.py, the report bundle)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image as PILImage
from typer.testing import CliRunner

from acp_trace import analyze
from acp_trace.cli import app
from acp_trace.errors import OutputError
from acp_trace.mock.recording import load_connections
from acp_trace.redaction.records import scrub_records
from acp_trace.render import plots
from acp_trace.render.plots._fit import cap_texts
from acp_trace.render.report import bundle
from acp_trace.render.report.bundle import write_report
from test_credentials import GITHUB, JWT, PEM, PEM_BODY
from tracebuilder import TraceBuilder

KEY = "sk-ant-api03-" + "Qw8_" * 23 + "xAA"


def old_trace(path: Path) -> Path:
    """A trace as `acp-secrets/2` recorded it: keys in a prompt, a file read, an error,
    stray stdout and stderr (a private key line by line), an escaped key."""
    b = TraceBuilder(agent="agent", version="1.0")
    rid = b.resume("s1")
    b.history("s1", 3)
    b.state("s1")
    b.response(rid, {})
    b.request("session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": KEY}]})
    b.response(7, {"content": f"GITHUB_TOKEN={GITHUB}\n"}, src="client")
    b.error(99, -1, data=f"bad jwt {JWT}")
    b.text("agent", f"stray Authorization: Bearer {GITHUB}")
    for line in PEM.split("\n"):
        b.text("stderr", line)
    b.text("stderr", "after the key")
    b.raw("client", {"msg": {"jsonrpc": "2.0", "method": "x", "params": {"t": "placeholder"}}})
    b.lines[-1] = b.lines[-1].replace(b"placeholder", KEY.replace("-", "\\u002d").encode())
    return b.write(path)


SECRETS = (KEY, GITHUB, JWT, PEM_BODY, "Qw8_Qw8_")


def test_scrub_records_replaces_credentials_in_every_cell(tmp_path: Path) -> None:
    """msg (escaped too) and text cells lose their credentials; stderr key lines, to END."""
    records = analyze(old_trace(tmp_path / "t.jsonl")).records
    out = scrub_records(records)
    dump = out.write_csv()
    assert all(secret not in dump for secret in SECRETS)
    assert "after the key" in dump and "<redacted:private-key>" in dump
    assert out.height == records.height and out.columns == records.columns
    clean = analyze(TraceBuilder().write(tmp_path / "clean.jsonl")).records
    assert scrub_records(clean) is clean  # nothing to replace: the same frame


@pytest.mark.parametrize("fmt", ["csv", "parquet", "perfetto", "otlp"])
def test_exports_hold_no_credential(tmp_path: Path, fmt: str) -> None:
    """Every export format of an old trace; --no-redact-content keeps them (the user's call)."""
    trace = old_trace(tmp_path / "t.jsonl")
    runner = CliRunner()
    for options, kept in (((), False), (("--no-redact-content",), True)):
        out = tmp_path / f"out-{fmt}-{len(options)}"
        target = f"{out}/" if fmt in ("perfetto", "otlp") else str(out)
        done = runner.invoke(app, ["export", str(trace), "-f", fmt, "-o", target, *options])
        assert done.exit_code == 0, done.output
        data = b"".join(p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file())
        if fmt == "parquet":
            import polars as pl

            from acp_trace.render.export import csv_text

            data = b"".join(
                csv_text(pl.read_parquet(p)).encode() for p in sorted(out.glob("*.parquet"))
            )
        assert (GITHUB.encode() in data) is kept or fmt in ("perfetto", "otlp")
        if not kept:
            assert all(secret.encode() not in data for secret in SECRETS)


def test_the_report_holds_no_credential(tmp_path: Path) -> None:
    """report.md, report.html and replays.csv of an old trace."""
    files = write_report(analyze(old_trace(tmp_path / "t.jsonl")), tmp_path / "r")
    for path in (files.markdown, files.html, files.csv):
        text = path.read_text()
        assert all(secret not in text for secret in SECRETS), path


def test_the_mock_serves_no_credential(tmp_path: Path) -> None:
    """What the mock would send (messages, stray stdout, stderr) of an old trace."""
    trace = old_trace(tmp_path / "t.jsonl")
    (conn,) = load_connections([trace])
    served = json.dumps(
        [
            [line.data.decode(errors="replace"), line.msg]
            for cue in [*conn.prologue, *conn.cues]
            for line in getattr(cue, "lines", [cue])
            if hasattr(line, "data")
        ]
    )
    records = [line for cue in conn.cues for line in cue.lines]
    assert records and all(secret not in served for secret in SECRETS)
    (kept,) = load_connections([trace], redact_content=False)
    raw = json.dumps(
        [line.data.decode(errors="replace") for cue in kept.cues for line in cue.lines]
    )
    assert GITHUB in raw or PEM_BODY in raw


def hostile_trace(path: Path) -> Path:
    """Labels meant to break matplotlib: huge, lone surrogates, wide glyphs, long numbers."""
    big = "W" * 100_000 + "LONE" + "\u0301" * 500
    b = TraceBuilder(agent=big, version="LONE" + "9" * 50_000)
    session = "S" * 50_000 + "LONE"
    rid = b.resume(session)
    b.history(session, 2)
    b.response(rid, {}, dt=10**7)
    for i in range(12):
        mid = b.request("x/" + str(i) + "M" * 20_000, {})
        b.response(mid, {}, dt=10.0**i)
    b.lines = [line.replace(b"LONE", b"\\ud800") for line in b.lines]  # lone surrogates
    return b.write(path)


def test_charts_of_a_hostile_trace_are_drawn_and_capped(tmp_path: Path) -> None:
    """Every chart is drawn; no text it holds is longer than the caps or wider than it."""
    files = write_report(analyze(hostile_trace(tmp_path / "h.jsonl")), tmp_path / "r")
    assert not files.failed and len(files.charts) == 4
    for chart in files.charts:
        with PILImage.open(chart) as image:
            assert image.size == (1200, 675)
    a = analyze(hostile_trace(tmp_path / "h2.jsonl"))
    for kind in plots.KINDS:
        fig = plots.figure(a, kind)
        cap_texts(fig)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        for text in fig.findobj(lambda artist: hasattr(artist, "get_text")):
            value = text.get_text()
            assert all(len(line) <= 160 for line in value.split("\n")), kind
            if value and text.get_visible():
                assert text.get_window_extent(renderer).width <= 1200, (kind, value[:60])


def test_a_chart_that_fails_does_not_take_the_report_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """matplotlib raising on one chart: the report is written, names the chart and why, and
    an older file of that chart is removed; `plot` fails with an OutputError saying so."""
    trace = old_trace(tmp_path / "t.jsonl")
    out = tmp_path / "r"
    write_report(analyze(trace), out)  # an earlier report: its gap.png is the older file
    assert (out / "gap.png").exists()
    real = plots.figure

    def failing(a: object, kind: str, **kw: object) -> object:
        if kind == "gap":
            raise RuntimeError(
                "In FT2Font: Could not render glyph (error code 0x62: raster overflow)"
            )
        return real(a, kind, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(bundle.plots, "figure", failing)
    files = write_report(analyze(trace), out)
    assert files.failed == {
        "gap.png": "RuntimeError: In FT2Font: Could not render glyph (error code 0x62: raster overflow)"
    }
    assert not (out / "gap.png").exists() and len(files.charts) == 3
    md, html = files.markdown.read_text(), files.html.read_text()
    assert "(gap.png) could not be drawn: RuntimeError: In FT2Font" in md
    assert "could not be drawn" in html and "replay.png" in md
    done = CliRunner().invoke(app, ["report", str(trace), "-o", str(tmp_path / "r2")])
    assert done.exit_code == 0 and "gap.png: the chart could not be drawn" in done.output
    done = CliRunner().invoke(app, ["plot", str(trace), "-o", str(tmp_path / "g.png")])
    assert isinstance(done.exception, OutputError)  # the CLI's main: one line, exit 2
    assert "the gap chart could not be drawn (RuntimeError: In FT2Font" in str(done.exception)
    assert not (tmp_path / "g.png").exists()
