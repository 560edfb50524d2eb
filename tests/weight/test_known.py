"""The shipped limits and deadlines, docs/rules.md's tables of them, and the options that add a
user's own (checked before any trace is read)."""

from __future__ import annotations

import re

import pytest

from acp_trace.errors import UsageError
from acp_trace.weight import DEFAULT, weight_options
from acp_trace.weight.known import DEADLINES, LIMITS, markdown_tables
from testpaths import ROOT


def test_docs_tables_are_the_shipped_data() -> None:
    """docs/rules.md holds exactly the tables made from weight/known.py (refresh them with
    scripts/known_tables.py)."""
    docs = (ROOT / "docs" / "rules.md").read_text()
    block = re.search(r"known.py -->\n(.*?)\n<!-- end of known limits -->", docs, re.S)
    assert block is not None and block.group(1) == markdown_tables()


def test_the_catalogue_values() -> None:
    """rules.md's limits (64 KiB, 4 MB, 16 MiB, 64 MiB) and deadlines (2, 5, 10, 60, 120 s),
    each with who has it and a source."""
    assert [k.value for k in LIMITS] == [65_536, 4_000_000, 16_777_216, 67_108_864]
    assert [k.value for k in DEADLINES] == [2_000, 5_000, 10_000, 60_000, 120_000]
    assert all(k.clients and k.source for k in LIMITS + DEADLINES)
    assert DEFAULT.quiet_window_ms == 250 and DEFAULT.quiet_cap_ms == 10_000


@pytest.mark.parametrize(
    ("spelling", "value", "name"),
    [
        ("65536", 65_536, "64 KiB"),  # the known one
        ("16MiB=editor", 16 << 20, "16 MiB = editor"),  # joins the known one
        ("4MB=java", 4_000_000, "4 MB = java"),
        ("70000", 70_000, "70,000 bytes"),
        ("1.5KiB=x", 1_536, "x"),
        ("2gb", 2_000_000_000, "2,000,000,000 bytes"),
    ],
)
def test_frame_limit_spellings(spelling: str, value: int, name: str) -> None:
    """BYTES with an optional unit (KB/MB/GB decimal, KiB/MiB/GiB binary) and =NAME."""
    limits = {t.value: t for t in weight_options(frame_limits=[spelling]).limits}
    assert limits[value].name == name


@pytest.mark.parametrize(
    "options",
    [
        {"frame_limits": ["-3"]},
        {"frame_limits": ["0"]},
        {"frame_limits": ["2TiB"]},
        {"frame_limits": ["1.5"]},
        {"frame_limits": ["12parsecs"]},
        {"frame_limits": ["100="]},
        {"frame_limits": ["100=\x1b[31m"]},
        {"deadlines": ["nan"]},
        {"deadlines": ["inf=x"]},
        {"deadlines": ["-5"]},
        {"deadlines": ["1e30"]},
        {"quiet_window_ms": 0.0},
        {"quiet_cap_ms": float("inf")},
    ],
)
def test_absurd_values_are_refused(options: dict[str, object]) -> None:
    """Negative, zero, huge, not a number, a control character in a name: a UsageError."""
    with pytest.raises(UsageError):
        weight_options(**options)  # type: ignore[arg-type]
