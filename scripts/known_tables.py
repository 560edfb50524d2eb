"""Write the known client limits and deadlines (src/acp_trace/weight/known.py) into
docs/rules.md, between its `known limits` markers. tests/weight/test_known.py fails until this
has run after a change to known.py.

    .venv/bin/python scripts/known_tables.py
"""

from __future__ import annotations

import re
from pathlib import Path

from acp_trace.weight.known import markdown_tables

DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
BLOCK = re.compile(
    r"(<!-- known limits: generated from src/acp_trace/weight/known.py -->\n)(.*?)"
    r"(\n<!-- end of known limits -->)",
    re.S,
)


def main() -> None:
    text = DOCS.read_text()
    if not BLOCK.search(text):
        raise SystemExit(f"{DOCS}: the known-limits markers are missing")
    DOCS.write_text(BLOCK.sub(lambda m: m.group(1) + markdown_tables() + m.group(3), text))


if __name__ == "__main__":
    main()
