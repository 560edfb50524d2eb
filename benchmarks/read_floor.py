"""The floor of a records table built with this design's libraries: a process that imports
polars, decodes every record of a v1 trace with msgspec (the envelope, `msg` as its exact
bytes, then the message's typed fields: what the analyzer's native reader decodes) and keeps
three columns of it (seq, the message text, the method) in DataFrames. It computes nothing
else (no kind, session, update columns, timeline or passes), so no analyzer built from
msgspec and polars can take less.

    .venv/bin/python benchmarks/read_floor.py TRACE
"""

from __future__ import annotations

import os
import sys

import polars as pl

from acp_trace.trace.records import MESSAGE, RECORDS

BLOCK = 4 << 20


def floor(path: str) -> int:
    """Read the trace; the number of records taken."""
    rows = 0
    frames = []
    fd = os.open(path, os.O_RDONLY)
    try:
        size, pos, carry, first = os.fstat(fd).st_size, 0, b"", True
        while pos < size:
            chunk = os.pread(fd, BLOCK, pos)
            pos += len(chunk)
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            block, carry = data[:cut], data[cut:]
            if first:  # the header
                block, first = block[block.find(b"\n") + 1 :], False
            recs = [r for r in RECORDS.decode_lines(block) if r.msg]
            msgs = [MESSAGE.decode(r.msg) for r in recs]
            text = pl.Series([bytes(r.msg) for r in recs], dtype=pl.Binary).cast(pl.String)
            method = [m.method if type(m.method) is str else None for m in msgs]
            frame = pl.DataFrame({"seq": [r.seq for r in recs], "msg": text, "method": method})
            frames.append(frame)
            rows += frame.height
    finally:
        os.close(fd)
    return rows


if __name__ == "__main__":
    print(floor(sys.argv[1]))
