"""No install hint names a package no index holds: acp-trace is installed from its clone, so
every extra is `pip install -e '.[EXTRA]'` there (issue 27 item 8), in the README, the docs
and the messages the commands print."""

from __future__ import annotations

import re

from testpaths import ROOT

UNINSTALLABLE = re.compile(r"pip install '?acp-trace\[")


def test_no_hint_installs_acp_trace_from_an_index() -> None:
    """README.md, docs/*.md and src/ never say `pip install 'acp-trace[...]'`."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted((ROOT / "src").rglob("*.py"))
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if UNINSTALLABLE.search(line)
    ]
    assert found == []
