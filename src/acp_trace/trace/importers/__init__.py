"""Converters from other ACP capture formats into trace format v1 lines (see docs/importing.md).

`convert(path, data, fmt)` returns [(trace name, v1 lines)], one per connection in the source.
`fmt` names the format (FORMATS); None detects it from the content.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from acp_trace.errors import InputError, UsageError
from acp_trace.files import (
    check_file_target,
    fitting_name,
    output_dir,
    replacing,
    wants_directory,
)
from acp_trace.jsonrpc import is_message, loads
from acp_trace.trace.format import header_items, header_timing
from acp_trace.trace.importers import (
    acpx,
    conductor,
    devtools,
    inspector,
    jsonrpc,
    thinkwell,
    vibe,
    zed,
)
from acp_trace.trace.importers._common import (
    TraceBuilder,
    Unparsed,
    describe,
    ndjson,
    parse_array,
    parse_stream,
)
from acp_trace.trace.paths import expand_paths

Converter = Callable[[Path, str], list[TraceBuilder]]
CONVERTERS: dict[str, Converter] = {
    "jsonrpc": jsonrpc.convert,
    "zed": zed.convert,
    "conductor": conductor.convert,
    "inspector": inspector.convert,
    "thinkwell": thinkwell.convert,
    "acpx": acpx.convert,
    "vibe": vibe.convert,
    "acp-devtools": devtools.convert,
}
FORMATS = ("acp-trace", *CONVERTERS)
DESCRIPTIONS = {
    "acp-trace": "an acp-trace v1 trace (line 1 a header)",
    "jsonrpc": "bare JSON-RPC (messages one per line, or a JSON array)",
    "zed": "Zed's ACP log (a JSON array of entries with _direction)",
    "conductor": "an ACP conductor trace (events with type, from, to)",
    "inspector": "an ACP Inspector export (acp-inspector-trace JSONL)",
    "thinkwell": "a @thinkwell/conductor trace (JSONL with direction, source, target, message)",
    "acpx": "acpx --format json output (JSON-RPC messages one per line)",
    "vibe": "mistral-vibe's ACP log (JSONL with ts, dir, msg)",
    "acp-devtools": "an acp-devtools session export (a JSON document with version 1, session, messages)",
}
DETECT_LINES = 20  # lines looked at to recognize a line-based format


def convert(path: Path, data: bytes, fmt: str | None = None) -> list[tuple[str, list[bytes]]]:
    """Convert a capture in another format into [(trace name, v1 lines)], one per connection.

    `fmt` names the format; None detects it from the content.
    """
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"unknown input format {fmt!r}: known formats are {', '.join(FORMATS)}")
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    name = fmt or detect(path, text)
    if name == "acp-trace":
        return [(str(path), _native_lines(path, data))]
    builders = CONVERTERS[name](path, text)
    if not any(b.converted for b in builders):
        problem = next((b.first_problem for b in builders if b.first_problem), None)
        found = f"({problem})" if problem else "(no message on a leg it keeps)"
        raise InputError(f"{path}: expected {DESCRIPTIONS[name]}, found nothing to convert {found}")
    kept = [b for b in builders if b.converted or b.unconverted] or builders[:1]
    return [b.finish() for b in kept]


def classify(value: Any) -> str | None:
    """The format a top-level JSON value of a file belongs to, or None."""
    if isinstance(value, list):
        if any(isinstance(e, dict) and "_direction" in e for e in value):
            return "zed"
        return "jsonrpc" if not value or any(is_message(e) for e in value) else None
    if not isinstance(value, dict):
        return None
    if "acp_trace" in value or {"seq", "src"} <= set(value):
        return "acp-trace"
    if inspector.is_header(value) or inspector.is_frame(value):
        return "inspector"
    if conductor.is_event(value):
        return "conductor"
    if thinkwell.is_line(value):
        return "thinkwell"
    if acpx.is_status(value) or acpx.is_error_report(value) or acpx.is_acpx_initialize(value):
        return "acpx"
    if vibe.is_line(value):
        return "vibe"
    if devtools.is_export(value):
        return "acp-devtools"
    return "jsonrpc" if is_message(value) else None


def detect(path: Path, text: str) -> str:
    """The format of a capture, from its content; InputError when it is none of FORMATS."""
    stream: list[tuple[int, str, Any]] = []  # the start read as JSON values, for the message
    if text.lstrip().startswith("["):
        entries, broken = parse_array(text)  # a damaged array still shows its first elements
        values = [[v for _, v in entries]] if entries or broken is None else [Unparsed("[")]
    else:
        values = [v for _, v in _take(ndjson(text), DETECT_LINES)]
        if values and isinstance(values[0], Unparsed):  # perhaps pretty-printed messages
            stream = _take(parse_stream(text), DETECT_LINES)
            values += [v for _, _, v in stream]
    for value in values:
        name = classify(value)
        if name is not None:
            return name
    found, hint = (describe(values[0]) if values else "an empty file"), ""
    if stream and not isinstance(stream[0][2], Unparsed) and "\n" in stream[0][1].strip():
        found = (
            f"a JSON document spanning several lines ({describe(stream[0][2])}), not JSON Lines,"
        )
        hint = "; try --from jsonrpc"
    raise InputError(
        f"{path}: expected an acp-trace v1 trace or an ACP capture in a known format "
        f"({', '.join(FORMATS[1:])}), found {found} at the start{hint}"
    )


def _take(items: Iterable[Any], count: int) -> list[Any]:
    out = []
    for item in items:
        out.append(item)
        if len(out) >= count:
            break
    return out


def _native_lines(path: Path, data: bytes) -> list[bytes]:
    """A native v1 trace's lines as they are (what `--from acp-trace` means)."""
    lines = data.splitlines(keepends=True)
    for _number, value in ndjson(lines[0].decode("utf-8", "replace") if lines else ""):
        if (
            isinstance(value, dict)
            and value.get("acp_trace") == 1
            and value.get("kind") == "header"
        ):
            return lines
        if isinstance(value, dict) and "acp_trace" in value:
            raise InputError(
                f"{path}: expected trace format version 1, found {value['acp_trace']!r}"
            )
    raise InputError(f"{path}: not an acp-trace v1 trace (line 1 is not a header)")


# ---------------------------------------------------------------- `acp-trace import`


def import_files(
    paths: Iterable[str | os.PathLike[str]], fmt: str | None = None
) -> list[tuple[str, list[bytes]]]:
    """Convert every file named (files, directories, globs) into v1 traces, in order."""
    out: list[tuple[str, list[bytes]]] = []
    for path in expand_paths(paths):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
        out.extend(convert(path, data, fmt))
    return out


def output_paths(names: list[str], out: str | os.PathLike[str]) -> list[Path]:
    """Where each trace goes: `out` itself for one trace, else one file per trace in `out/`.

    `out` is a directory when it exists as one or ends with a `/`; several traces need one.
    A directory is created (0700) when missing; a file's directory must exist. The paths are
    checked here, before anything is written (`acp_trace.files`).
    """
    if not wants_directory(out):
        if len(names) != 1:
            raise UsageError(
                f"-o {out}: the sources give {len(names)} traces ({', '.join(names[:4])}"
                f"{', ...' if len(names) > 4 else ''}); name a directory (existing, or ending in /)"
            )
        check_file_target(out)
        return [Path(out)]
    return files_in(output_dir(out), names)


def files_in(folder: Path, names: list[str]) -> list[Path]:
    """The file in `folder` of each trace name: its stem, `-CONNECTION` for one connection of
    a capture, `-2`, `-3` when two would clash; a name too long for the file system is
    shortened (`fitting_name`)."""
    paths: list[Path] = []
    for name in names:
        path_part, _, conn = name.partition("#")
        stem = Path(path_part).stem + (f"-{_safe(conn)}" if conn else "")
        candidate, n = folder / fitting_name(stem, ".jsonl"), 1
        while candidate in paths:
            n += 1
            candidate = folder / fitting_name(stem, f"-{n}.jsonl")
        paths.append(candidate)
    return paths


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", text) or "_"


def write_trace(path: Path, lines: list[bytes]) -> None:
    """Write a converted trace atomically, readable by its owner only (0600): a symlink at
    `path` is replaced, not followed (`acp_trace.files`)."""
    with replacing(path) as temp, open(temp, "wb") as handle:
        handle.writelines(lines)  # an OSError here is replacing's OutputError


_TAP_RECORD = re.compile(rb'\{"seq":\d+,"t_ns":(?:null|-?\d+),"src":"tap"')


def header_summary(lines: list[bytes]) -> dict[str, Any]:
    """The counts a person wants after an import: records, unconverted, ambiguous, and the
    importer's warnings (what the capture evidently lacks: header `warnings`)."""
    head = loads(lines[0]) if lines else {}
    unconverted = head.get("unconverted")
    warnings = head.get("warnings")
    return {
        "warnings": [w for w in warnings if isinstance(w, str)]
        if isinstance(warnings, list)
        else [],
        "records": sum(1 for line in lines[1:] if not _TAP_RECORD.match(line)),
        "unconverted": unconverted if type(unconverted) is int else 0,
        "ambiguous": len(header_items(head, "ambiguous")),
        "timing": header_timing(head),
    }
