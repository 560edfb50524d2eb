"""Helpers shared by the benchmark scripts: statistics, child processes, the machine, tables.

Every benchmark compares variants measured in the same run, repetitions interleaved (the
order rotates each round), and reports medians and ratios: absolute times on a shared,
noisy machine mean little, ratios measured side by side do.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def median(values: Sequence[float]) -> float:
    """The median (mean of the two middle values for an even count)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear between the closest ranks."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def rounds(names: Sequence[str], reps: int) -> Iterator[tuple[int, str]]:
    """(repetition, variant) in interleaved order: every round runs each variant once, and
    the starting variant rotates so no variant always runs first (or right after another)."""
    for rep in range(reps):
        shift = rep % len(names)
        for name in [*names[shift:], *names[:shift]]:
            yield rep, name


@dataclass
class ChildRun:
    """What one child process reported, with its own peak memory."""

    out: dict[str, Any]
    wall: float
    maxrss_mb: float
    cpu: float = 0.0  # its user + system time, seconds


def run_child(argv: list[str], env: dict[str, str] | None = None) -> ChildRun:
    """Run a child that prints one JSON object as its last line. Its peak RSS comes from
    wait4, for this child alone (RUSAGE_CHILDREN would keep the largest child seen so far)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            env=None if env is None else {**os.environ, **env},
        )
        assert proc.stdout is not None
        out = proc.stdout.read()
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-3000:]
            raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}):\n{tail}")
    cpu = usage.ru_utime + usage.ru_stime
    last = json.loads(out.decode().strip().splitlines()[-1])
    return ChildRun(last, wall, usage.ru_maxrss / 1024, cpu)


def machine() -> dict[str, Any]:
    """The facts a reader needs to compare figures: cores, CPU, Python and library versions."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions: dict[str, Any] = {}
    for name in ("polars", "orjson"):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = None
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        **versions,
    }


@dataclass
class Figure:
    """One measured figure against its target."""

    name: str
    value: float
    target: str
    met: bool | None
    unit: str = ""
    note: str = ""


def load_figure(before: float, after: float) -> Figure:
    """The machine's 1-minute load average before and after a run, as a figure without target."""
    note = f"after {after:.2f}; 1-minute averages on {os.cpu_count()} cores"
    return Figure("load average before / after", before, "-", None, "", note)


def report(
    title: str, figures: Iterable[Figure], extra: dict[str, Any], json_out: str | None
) -> None:
    """Print the figures as a table (and save them as JSON when asked)."""
    figures = list(figures)
    print(f"\n== {title}")
    print(f"machine: {json.dumps(machine())}")
    width = max(len(f.name) for f in figures)
    for f in figures:
        met = {True: "met", False: "NOT met", None: "-"}[f.met]
        value = f"{f.value:.3g}{f.unit}"
        note = f"  ({f.note})" if f.note else ""
        print(f"  {f.name:<{width}}  {value:>12}  target {f.target:<12} {met}{note}")
    if json_out:
        data = {
            "title": title,
            "machine": machine(),
            "figures": [f.__dict__ for f in figures],
            **extra,
        }
        Path(json_out).write_text(json.dumps(data, indent=2) + "\n")


def python() -> str:
    """The interpreter running the benchmarks (the project's venv when run from it)."""
    return sys.executable
