"""The memory check: a limit below what acp-trace itself needs is said to be so, before any
trace is read and without blaming the input; an input too large for the limit is named."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from acp_trace.errors import InputError
from acp_trace.fleet import run
from acp_trace.trace import memory, pool, reader
from acp_trace.trace.paths import find_traces
from testpaths import SAMPLES

SMALL = SAMPLES / "gemini-cli-v1-load.jsonl"  # 110 kB
MB = 1 << 20


@pytest.fixture
def limited(monkeypatch: pytest.MonkeyPatch) -> object:
    """A process that uses 400 MB before reading, under a limit the test sets."""

    def limit_to(n: int) -> None:
        monkeypatch.setattr(memory.resource, "getrlimit", lambda _which: (n, n))

    monkeypatch.setattr(memory, "address_space", lambda: 400 * MB)
    monkeypatch.setattr(memory, "_FLOOR", [None])
    return limit_to


def _no_reading(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record any attempt to read the traces' contents."""
    reads: list[str] = []

    def read_all(found: object, *args: object) -> object:
        reads.append("read_all")
        raise AssertionError("a trace was read")

    monkeypatch.setattr(pool, "read_all", read_all)
    return reads


def test_a_limit_below_the_floor_blames_the_limit_before_reading(
    limited: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a limit below the process's own floor (400 MB in use plus the working space), a
    23 kB-sized input is not blamed: the message says the limit is too low for acp-trace
    itself, gives the floor measured and the ulimit to set, and no trace is read."""
    limited(600 * MB)  # type: ignore[operator]
    reads = _no_reading(monkeypatch)
    with pytest.raises(InputError) as caught:
        reader.read_found(find_traces([SMALL]))
    text = str(caught.value)
    assert "below what acp-trace itself needs before it reads any trace" in text
    assert "about 1,100.0 MB (400.0 MB in use before reading" in text
    assert "ulimit -v 614400" in text  # the limit, in ulimit's KiB
    floor_kib = (400 * MB + memory.NEED_BASE) // 1024
    wanted = int(text.split("Set ulimit -v ")[1].split()[0])
    assert wanted > floor_kib  # enough for acp-trace and this input
    assert "try fewer" not in text.lower()
    assert reads == []


def test_an_input_past_the_limit_is_named_with_its_size(
    limited: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """When acp-trace fits under the limit but the input does not, the message names the
    traces, their size and lines, says to try fewer or smaller, and nothing is read."""
    for i in range(3):
        (tmp_path / f"t{i}.jsonl").write_bytes(SMALL.read_bytes() * 40)  # 4.3 MB, 16,640 lines
    limited(1_120 * MB)  # type: ignore[operator]  # above the floor (1,100 MB), below its need
    reads = _no_reading(monkeypatch)
    with pytest.raises(InputError) as caught:
        reader.read_found(find_traces([tmp_path]))
    text = str(caught.value)
    assert text.startswith(f"out of memory for 3 traces ({tmp_path / 't0.jsonl'}, ")
    assert "12.6 MB in all" in text
    lines = int(text.split("the rest for about ")[1].split()[0].replace(",", ""))
    assert abs(lines - 3 * 40 * 416) < 1_000  # estimated from the files' first bytes
    assert "1,100.0 MB for acp-trace itself" in text and "Try fewer or smaller traces" in text
    assert reads == []
    limited(1_400 * MB)  # type: ignore[operator]  # room for both: no error
    memory.check_memory(find_traces([tmp_path]))


def test_the_fleet_checks_before_any_partition_is_read(limited: object, tmp_path: Path) -> None:
    """`--workers` over many traces: the limit is checked in the parent before any worker
    starts, not in a worker a thousand files in."""
    for i in range(40):
        (tmp_path / f"t{i:02}.jsonl").write_bytes(SMALL.read_bytes())
    limited(600 * MB)  # type: ignore[operator]
    analyzed: list[object] = []
    with pytest.raises(InputError, match="below what acp-trace itself needs"):
        run([tmp_path], workers=2, analyze=lambda part: analyzed.append(part) or {})  # type: ignore[func-returns-value]
    assert analyzed == []


def test_a_process_checks_against_its_first_floor(
    limited: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later check in the same process (a fleet worker's next partition) measures against
    the floor of the first: the working space reserved since is what NEED_BASE counted."""
    limited(1_200 * MB)  # type: ignore[operator]
    found = find_traces([SMALL])
    memory.check_memory(found)
    monkeypatch.setattr(memory, "address_space", lambda: 900 * MB)
    memory.check_memory(found)  # 900 MB in use now, but the floor stays 1,100 MB


def _ulimit(kib: int) -> object:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (kib << 10, resource.RLIM_INFINITY))

    return apply


@pytest.mark.parametrize("workers", ["1", "2"])
def test_under_a_real_ulimit_the_cli_blames_the_limit(tmp_path: Path, workers: str) -> None:
    """Under `ulimit -v` 700 MB (below what the process needs with no input) the CLI says in
    one line that the limit is too low for acp-trace itself and what to set; exit 2."""
    for i in range(4):
        (tmp_path / f"t{i}.jsonl").write_bytes(SMALL.read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "acp_trace", "replays", "--workers", workers, str(tmp_path)],
        capture_output=True,
        text=True,
        preexec_fn=_ulimit(700 << 10),  # type: ignore[arg-type]
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("acp-trace: the address space is limited to 700.0 MB")
    assert "below what acp-trace itself needs" in done.stderr and "Set ulimit -v " in done.stderr
    assert "try fewer" not in done.stderr.lower()
