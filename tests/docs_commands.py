"""The commands of README.md and docs/*.md, found for tests/test_docs.py to run.

- Every line of a ```sh block that starts with `acp-trace` is a command (a line ending in `\\`
  goes on), run with bash (pipes and redirections as written) in a fresh workspace that holds
  the files the docs name (`workspace`); it must exit 0 or 1 (1: a finding or a regression,
  as documented), without a traceback.
- In a ```text block, each `$ acp-trace ...` line is run the same way and what it prints
  (stdout then stderr) must be the lines shown below it, up to the next `$` line: the sample
  outputs are produced by the code.
- Not run, by a marker in the doc: a line whose comment says `# not run: REASON`, or a block
  whose fence is preceded by the line `<!-- not run: REASON -->` (a synopsis, a live agent, a
  Dask cluster, an install). Lines of ```sh blocks that do not start with `acp-trace`
  (installs, benchmarks, pytest) are what CI and the benchmark smoke test run.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from testpaths import DATA, ROOT, SAMPLES
from tracebuilder import TraceBuilder

NOT_RUN = re.compile(r"#\s*not run:\s*\S")
BLOCK_NOT_RUN = re.compile(r"^<!--\s*not run:\s*\S.*-->\s*$")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
# Names the docs use for "your traces": what they stand for in the workspace.
PLACEHOLDERS = {"TRACE": "sample_traces/claude-agent-acp-v2-resume.jsonl"}


@dataclass(frozen=True)
class DocCommand:
    """One command of a doc: where it is, the shell text, and the output shown (text blocks)."""

    where: str  # FILE:LINE
    command: str
    shown: str | None = None


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def commands(path: Path) -> list[DocCommand]:
    """Every command of one Markdown file that is to be run (see the module doc)."""
    text = path.read_text()
    found: list[DocCommand] = []
    for block in FENCE.finditer(text):
        first = text[: block.start()].count("\n") + 2  # the first line inside the fence
        before = text[: block.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if BLOCK_NOT_RUN.match(before):
            continue
        lang, body = block.group(1), block.group(2)
        if lang == "sh":
            found += _shell(path.name, first, body)
        elif lang == "text":
            found += _sessions(path.name, first, body)
    return found


def _shell(name: str, first: int, body: str) -> list[DocCommand]:
    out: list[DocCommand] = []
    lines = body.splitlines()
    number = 0
    while number < len(lines):
        start, line = number, lines[number]
        while line.endswith("\\") and number + 1 < len(lines):
            number += 1
            line = line[:-1] + " " + lines[number].strip()
        number += 1
        if line.lstrip().startswith("acp-trace") and not NOT_RUN.search(line):
            out.append(DocCommand(f"{name}:{first + start}", _placeholders(line)))
    return out


def _sessions(name: str, first: int, body: str) -> list[DocCommand]:
    """`$ command` lines of a text block with the output shown under each."""
    out: list[DocCommand] = []
    lines = body.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("$ acp-trace")]
    for n, i in enumerate(starts):
        if NOT_RUN.search(lines[i]):
            continue
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        shown = "".join(line + "\n" for line in lines[i + 1 : end])
        out.append(DocCommand(f"{name}:{first + i}", _placeholders(lines[i][2:]), shown))
    return out


def _placeholders(command: str) -> str:
    for name, value in PLACEHOLDERS.items():
        command = re.sub(rf"\b{name}\b(?!\.\.\.)", value, command)
    return command


# ---------------------------------------------------------------- the workspace


def readme_trace(path: Path) -> Path:
    """t.jsonl of the README's examples: a v2 resume with a marker, a child, a state snapshot
    and a response, then a v2 resume answered before its marker."""
    b = TraceBuilder(agent="demo-agent", version="9.9")
    rid = b.resume("sess_1", dt=2)
    b.history("sess_1", 2, dt=3)
    b.update("sess_1", "subagent_update", sessionId="child_1")
    b.history("child_1", 1)
    b.marker("child_1")
    b.marker("sess_1", dt=2)
    b.state("sess_1")
    b.response(rid, {}, dt=450)
    r2 = b.resume("sess_2")
    b.history("sess_2", 1)
    b.response(r2, {}, dt=120)
    b.event("exit", code=0, signal=None)
    return b.write(path)


def workspace(folder: Path) -> Path:
    """A folder with the files the docs' commands name: sample_traces/, t.jsonl, traces/ (the
    samples, with traces/agent-1.0/ and traces/agent-1.1/), base/ and new/, an empty/ folder,
    a README.md, a notes.json that is no trace, and the captures of docs/importing.md."""
    shutil.copytree(SAMPLES, folder / "sample_traces")
    readme_trace(folder / "t.jsonl")
    demo = sorted((folder / "sample_traces").glob("demo-v2-*.jsonl"))
    for side, part in (("agent-1.0", demo[:2]), ("agent-1.1", demo[2:])):
        for base in (folder / "traces" / side, folder / ("base" if side == "agent-1.0" else "new")):
            base.mkdir(parents=True, exist_ok=True)
            for trace in part:
                shutil.copy(trace, base / trace.name)
    for trace in (folder / "sample_traces").glob("*.jsonl"):
        shutil.copy(trace, folder / "traces" / trace.name)
    (folder / "empty").mkdir()
    (folder / "README.md").write_text("# not an output folder\n")
    (folder / "notes.json").write_text('{\n  "name": "notes",\n  "version": 1\n}\n')
    imports = DATA / "imports"
    for name, source in {
        "zed-log.json": "zed-acp-log.json",
        "inspector-export.jsonl": "inspector.jsonl",
        "conductor.jsons": "conductor.jsons",
        "capture.ndjson": "bare.ndjson",
        "acp-devtools-session.json": "acp-devtools-0.4.0-claude-v1.pretty.json",
    }.items():
        shutil.copy(imports / source, folder / name)
    return folder
