"""Tests that keep the documentation in step with the code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest

from acp_trace.analysis.checks import RULES
from docs_commands import DocCommand, commands, doc_files, workspace

ROOT = Path(__file__).resolve().parents[1]


def _documented_rules() -> dict[str, tuple[str, str]]:
    text = (ROOT / "docs" / "rules.md").read_text()
    found: dict[str, tuple[str, str]] = {}
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        rule_id = block.splitlines()[0].strip()
        severity = re.search(r"^- severity: (\w+)", block, flags=re.M)
        side = re.search(r"^- side: (\w+)", block, flags=re.M)
        assert severity, f"{rule_id} has no severity line"
        assert side, f"{rule_id} has no side line"
        found[rule_id] = (severity.group(1), side.group(1))
        for part in ("- broken when:", "- breaking sequence:", "- what to do"):
            assert part in block, f"{rule_id} lacks {part!r}"
    return found


def test_rules_doc_matches_registry() -> None:
    """docs/rules.md documents exactly the registered rules, with their default severities and
    the side each blames."""
    assert _documented_rules() == {r.id: (r.severity, r.side) for r in RULES.values()}


# ---------------------------------------------------------------- the docs' commands run

DOC_COMMANDS = [c for path in doc_files() for c in commands(path)]


def _run_doc_command(command: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """`command` with bash in `folder`, this environment's acp-trace first on PATH, a private
    HOME, no colour, stdin closed; a hang guard only."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(folder / "home"),
        "NO_COLOR": "1",
        "MPLCONFIGDIR": os.environ.get("MPLCONFIGDIR") or matplotlib.get_configdir(),
    }
    env.pop("COLUMNS", None)
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("doc", DOC_COMMANDS, ids=[f"{c.where} {c.command}" for c in DOC_COMMANDS])
def test_every_command_of_the_docs_runs(doc: DocCommand, tmp_path: Path) -> None:
    """Each command of README.md and docs/*.md runs against the bundled samples (exit 0, or 1
    for a finding or a regression; never a usage error or a traceback), and a sample output
    shown after `$ command` is exactly what the command prints (stdout, then stderr)."""
    folder = workspace(tmp_path / "ws")
    (folder / "home").mkdir()
    result = _run_doc_command(doc.command, folder)
    printed = result.stdout + result.stderr
    if doc.shown is not None:
        lines = "".join(line.rstrip() + "\n" for line in printed.splitlines())
        assert lines == doc.shown, (
            f"{doc.where}: the output shown is not what `{doc.command}` prints"
        )
        return
    assert "Traceback" not in printed
    assert result.returncode in (0, 1), (
        f"{doc.where}: `{doc.command}` exited {result.returncode}: {printed}"
    )


def test_the_docs_commands_are_found() -> None:
    """The finder sees the README's commands (the sample output, the mock and the report) and
    leaves out what is marked `not run`."""
    found = {c.command for c in DOC_COMMANDS}
    assert "acp-trace replays t.jsonl" in found
    assert "acp-trace report sample_traces -o acp-trace-report" in found
    assert not any("--scheduler" in c for c in found)
    assert all(c.startswith("acp-trace") for c in found)
