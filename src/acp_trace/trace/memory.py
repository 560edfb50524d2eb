"""The memory check: before any trace is read, whether the address space this process may use
(`ulimit -v`, RLIMIT_AS) holds acp-trace itself and the analysis of its input. Past the limit
polars aborts (a failed allocation in Rust, with no message), so the check says it in one line
first, and tells two cases apart:

- the limit is below the *floor*, what this process needs before it reads anything: the
  address space it already uses (`VmSize`, measured at the check) and the analyzer's working
  space. No input is small enough: the message says so, with the floor and what to set;
- the floor fits but the input does not: the message names the input and its size.

The input's share is estimated from its bytes and its lines (a table row costs more than its
bytes): the lines from the first bytes of a few of the files. Measured (VmPeak of `replays`,
this process at about 0.4 GB at the check): one small trace 1.02 to 1.07 GB; one 64 MB trace
of 60,000 lines of 1 KB 1.19 GB; 1,200 traces of 110 KB (132 MB, 500,000 lines) 2.08 GB.
"""

from __future__ import annotations

import re
import resource
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from acp_trace.errors import InputError
from acp_trace.quantities import count, size
from acp_trace.trace.paths import Found

NEED_BASE = 700 << 20  # the analyzer's working space besides its input (threads, arenas)
NEED_PER_BYTE = 2  # the analyzer holds about twice its input (records and timeline)
NEED_PER_LINE = 2048  # and about 2 KB of address space per row, whatever its size
SAMPLE_FILES = 16  # files whose first bytes give the input's bytes per line
SAMPLE_BYTES = 64 << 10


# The address space in use at the first check of this process (and of the workers it forks):
# a later check (a fleet worker's next partition, the MCP server reading again) finds the
# working space already reserved (polars' threads and arenas), which NEED_BASE counts.
_FLOOR: list[int | None] = [None]


@dataclass(frozen=True)
class Budget:
    """The address space limit and what the analysis of some input needs under it (bytes)."""

    limit: int
    in_use: int  # this process's address space at its first check
    floor: int  # in_use plus the working space: what it needs before reading anything
    input_bytes: int = 0
    input_lines: int = 0

    @property
    def need(self) -> int:
        return self.floor + NEED_PER_BYTE * self.input_bytes + NEED_PER_LINE * self.input_lines


def check_memory(found: Sequence[Found], share: str = "") -> None:
    """InputError before any of `found` is read when the address space limit cannot hold
    acp-trace itself (whatever the input), or the analysis of these files. `share` says what
    they are of a larger input (the largest partition a fleet worker reads)."""
    limit, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return
    in_use = _FLOOR[0] if _FLOOR[0] is not None else address_space()
    _FLOOR[0] = in_use
    floor = Budget(limit, in_use, in_use + NEED_BASE)
    if floor.floor > limit:
        raise InputError(below_floor(floor, found, share))
    if not found:
        return
    total = sum(_size(item.path) for item in found)
    budget = Budget(limit, in_use, floor.floor, total, _lines(found, total))
    if budget.need > limit:
        raise InputError(input_too_large(budget, found, share))


def below_floor(b: Budget, found: Sequence[Found], share: str = "") -> str:
    """The limit is too low for acp-trace itself: no input is to blame."""
    total = sum(_size(item.path) for item in found)
    enough = Budget(b.limit, b.in_use, b.floor, total, _lines(found, total) if found else 0)
    return (
        f"the address space is limited to {size(b.limit)} ({_ulimit(b.limit)}), below what "
        f"acp-trace itself needs before it reads any trace: about {size(b.floor)} "
        f"({size(b.in_use)} in use before reading, measured, and about {size(NEED_BASE)} of "
        f"working space); no trace was read. Set {_ulimit(enough.need)} or more (KiB; enough for "
        f"{share}{_input(found, total)}), or ulimit -v unlimited"
    )


def input_too_large(b: Budget, found: Sequence[Found], share: str = "") -> str:
    """The input is what passes the limit: name it, its size and what would do."""
    return (
        f"out of memory for {share}{_input(found, b.input_bytes)}: their analysis needs about "
        f"{size(b.need)} of address space ({size(b.floor)} for acp-trace itself, the rest for "
        f"about {count(b.input_lines)} lines), and it is limited to {size(b.limit)} "
        f"({_ulimit(b.limit)}); no trace was read. Try fewer or smaller traces at once, or "
        f"set {_ulimit(b.need)} or more (KiB)"
    )


def _input(found: Sequence[Found], total: int) -> str:
    from acp_trace.trace.pool import traces_named

    if not found:
        return "the input"
    largest = max(found, key=lambda item: _size(item.path))
    names = traces_named([str(item.path) for item in found])
    if len(found) == 1:
        return f"{names} ({size(total)})"
    return (
        f"{names}: {size(total)} in all, the largest {largest.path} ({size(_size(largest.path))})"
    )


def _ulimit(n: int) -> str:
    return f"ulimit -v {-(-n // 1024)}"


def _lines(found: Sequence[Found], total: int) -> int:
    """The input's lines, estimated from the first bytes of up to SAMPLE_FILES files spread
    over it (the largest among them); at least a line a file."""
    step = max(1, len(found) // SAMPLE_FILES)
    sample = [*found[::step][:SAMPLE_FILES], max(found, key=lambda item: _size(item.path))]
    read = newlines = 0
    for item in sample:
        try:
            with item.path.open("rb") as handle:
                head = handle.read(SAMPLE_BYTES)
        except OSError:
            continue
        read += len(head)
        newlines += head.count(b"\n") + (not head.endswith(b"\n") and bool(head))
    per_byte = newlines / read if read else 0.0
    return max(len(found), round(total * per_byte))


def address_space() -> int:
    """This process's address space now (`VmSize`), 0 where /proc does not say."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0
    match = re.search(r"VmSize:\s+(\d+) kB", status)
    return int(match.group(1)) * 1024 if match else 0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
