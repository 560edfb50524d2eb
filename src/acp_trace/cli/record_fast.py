"""`acp-trace record` without typer: the fast path of the command line, and the one runner
both paths share.

`run_if_plain` takes a command line of the form `record [OPTIONS] -- AGENT [ARGS...]` whose
options are all in OPTIONS with well-formed values, and runs it (then exits); for anything
else (help, an unknown or malformed option, another command) it returns and the typer app
parses the line, with its usual help and errors. OPTIONS must name every option of the typer
`record` command (tests/cli/test_record_fast.py checks it), so both paths mean the same: a
new option of `record` needs a row here (and its name in REPEATED if it may be repeated).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without loading typing (start-up time)
if TYPE_CHECKING:
    from typing import Any

# option -> (RecordOptions field, how its value is read; None for a flag that sets False)
Reader = Callable[[str], object] | None


def _path(text: str) -> str:
    """A path as a string: pathlib is not loaded on the way to the agent (trace_file.py).
    An empty one is left to typer, whose Path("") is the current directory."""
    if not text:
        raise ValueError(text)
    return text


def _count(minimum: int) -> Callable[[str], int]:
    def read(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise ValueError(text)
        return value

    return read


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0.0:  # also refuses nan
        raise ValueError(text)
    return value


# A repeatable option (`--x A --x B`) is listed in REPEATED; its field gets a tuple of values.
REPEATED = frozenset({"--redact-stderr"})
OPTIONS: dict[str, tuple[str, Reader]] = {
    "-o": ("output", _path),
    "--output": ("output", _path),
    "--dir": ("directory", _path),
    "--no-redact": ("redact", None),
    "--no-redact-content": ("redact_content", None),
    "--redact-stderr": ("redact_stderr", str),
    "--max-record-bytes": ("max_record_bytes", _count(0)),
    "--grace": ("grace", _seconds),
    "--queue-bytes": ("queue_bytes", _count(1)),
    "--listen": ("listen", str),  # the remote recorder: never the fast path (parse says None)
    "--upstream": ("upstream", str),
}
REMOTE = frozenset({"listen", "upstream"})


def parse(argv: list[str]) -> dict[str, Any] | None:
    """The RecordOptions fields of a plain `record ... -- AGENT...` line, or None."""
    if len(argv) < 3 or argv[0] != "record" or "--" not in argv:
        return None
    split = argv.index("--")
    options, command = argv[1:split], argv[split + 1 :]
    if not command:
        return None
    fields: dict[str, Any] = {"command": command}
    i = 0
    while i < len(options):
        name, _, inline = options[i].partition("=")
        if name not in OPTIONS or (inline and OPTIONS[name][1] is None):
            return None
        field, read = OPTIONS[name]
        if read is None:
            fields[field] = False
            i += 1
            continue
        if not inline:
            if i + 1 >= len(options):
                return None
            inline, i = options[i + 1], i + 1
        try:
            value = read(inline)
        except ValueError:
            return None
        if name in REPEATED:
            fields[field] = (*fields.get(field, ()), value)
        else:
            fields[field] = value
        i += 1
    return None if REMOTE & fields.keys() else fields


def run_if_plain(argv: list[str]) -> None:
    """Run a plain `record` command line and exit; return for anything else."""
    fields = parse(argv)
    if fields is None:
        return
    from acp_trace.record.options import RecordOptions

    sys.exit(run(RecordOptions(**fields)))


def warn(message: str) -> None:
    sys.stderr.write(f"acp-trace: {message}\n")
    sys.stderr.flush()


def run(options: Any) -> int:
    """Record; the agent's exit code (an acp-trace error is one line and exit 2)."""
    from acp_trace.errors import AcpTraceError
    from acp_trace.quantities import count
    from acp_trace.record.tap import record

    try:
        result = record(options, warn=warn)
    except AcpTraceError as exc:
        warn(str(exc))
        sys.exit(2)
    if result.dropped and result.write_error is None:
        warn(
            f"{result.trace}: {count(result.dropped)} records were dropped (the writer could not keep"
            " up; --queue-bytes holds more)"
        )
    return result.exit_code
