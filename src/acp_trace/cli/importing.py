"""`acp-trace import`: other tools' captures to trace format v1."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from acp_trace.cli.app import From, app
from acp_trace.cli.terminal import emit


@app.command("import")
def import_(
    sources: Annotated[
        list[str], typer.Argument(metavar="SOURCE", help="Capture files, directories or globs.")
    ],
    output: Annotated[
        str,
        typer.Option(
            "-o",
            "--output",
            metavar="PATH",
            help="Output file; a directory (existing, or ending in /) for several.",
        ),
    ],
    source_format: From = None,
) -> None:
    """Convert other ACP captures (bare JSON-RPC, Zed log, conductor, inspector) to trace v1.

    Imported traces hold message contents: they are written 0600 (new directories 0700).
    """
    from acp_trace.errors import UsageError
    from acp_trace.trace import importers

    traces = importers.import_files(sources, source_format)
    if not traces:
        raise UsageError(f"{' '.join(sources)}: no capture file found")
    targets = importers.output_paths([name for name, _ in traces], output)
    inputs = {Path(name.partition("#")[0]).resolve(): name for name, _ in traces}
    for target in targets:
        if target.resolve() in inputs:
            source = inputs[target.resolve()]
            raise UsageError(f"-o {target}: would overwrite the source {source}")
    for (name, lines), target in zip(traces, targets, strict=True):
        importers.write_trace(target, lines)
        facts = importers.header_summary(lines)
        notes = "".join(
            f", {facts[key]} {key}" for key in ("unconverted", "ambiguous") if facts[key]
        )
        records = f"{facts['records']} record" + ("" if facts["records"] == 1 else "s")
        emit(f"{name} -> {target}: {records}, {facts['timing']}{notes}\n")
