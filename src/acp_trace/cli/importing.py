"""`acp-trace import`: other tools' captures to trace format v1."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from acp_trace.cli.app import From, app
from acp_trace.quantities import count, counted


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
            help="Output file (- for stdout); a directory (existing, or ending in /) for several.",
        ),
    ],
    source_format: From = None,
) -> None:
    """Convert captures of other tools, in any format --from names, to trace v1.

    Imported traces hold message contents: they are written 0600 (new directories 0700).
    An existing file is replaced only when an earlier import wrote it (never a recording).
    """
    from acp_trace.cli.targets import side_note
    from acp_trace.cli.terminal import warn
    from acp_trace.errors import UsageError
    from acp_trace.files import (
        check_directory_target,
        check_file_target,
        check_not_inputs,
        wants_directory,
    )
    from acp_trace.owned import check_file, check_folder
    from acp_trace.trace import importers
    from acp_trace.trace.paths import expand_paths

    into_folder = wants_directory(output)
    (check_directory_target if into_folder else check_file_target)(output)
    found = expand_paths(sources)  # no input may be an output, before any is read
    names = [str(path) for path in found]
    if into_folder:
        check_folder(output, "import", [], [*sources, *found], whole=False)
    expected = importers.files_in(Path(output), names) if into_folder else [Path(output)]
    check_not_inputs(expected, found)
    for target in expected:
        check_file(target, "import", made_by_import)
    traces = importers.import_files(sources, source_format)
    if not traces:
        raise UsageError(f"{' '.join(sources)}: no capture file found")
    targets = importers.output_paths([name for name, _ in traces], output)
    check_not_inputs(targets, found)
    for target in targets:  # a capture of several connections names its traces only now
        check_file(target, "import", made_by_import)
    for (name, lines), target in zip(traces, targets, strict=True):
        importers.write_trace(target, lines)
        facts = importers.header_summary(lines)
        notes = "".join(
            f", {count(facts[key])} {key}" for key in ("unconverted", "ambiguous") if facts[key]
        )
        records = counted(facts["records"], "record")
        side_note(f"{name} -> {target}: {records}, {facts['timing']}{notes}\n", output)
        for warning in facts["warnings"]:
            warn(f"{name}: {warning}")


def made_by_import(path: Path) -> bool:
    """True when the file is a trace `import` wrote (its header's recorder says so): the
    only file `import -o` replaces besides an empty one. A recording is never replaced."""
    import orjson

    with open(path, "rb") as handle:
        head = orjson.loads(handle.readline(1 << 20))
    if not isinstance(head, dict) or head.get("kind") != "header":
        return False
    return str(head.get("recorder")).endswith(" import")
