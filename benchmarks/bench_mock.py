"""How faithfully `acp-trace mock --speed 1` reproduces a recording's timings (docs/mock.md).

For each sample trace, the demo client it was recorded with drives `acp-trace mock TRACE`
through `acp-trace record`, REPS times; every replay timing of the new trace is compared with
the original's: delta = mock - original, in ms. Timings measured from the request
(first_update_ms ... response_ms) can only come out later (the mock sends nothing before its
time and the tap stamps the request before the mock reads it); the two gaps
(marker_to_response_ms, last_history_to_response_ms) can move either way. The tolerance
docs/mock.md states is checked here: the median |delta| within P50_MS and 90 % within P90_MS;
the tail (p99, max) is reported, it is the scheduler's on a loaded machine. The machine is
shared: the load average is printed with the figures.

    python benchmarks/bench_mock.py [--reps N] [--speed X] [--json FILE] [SAMPLE...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import benchlib
from benchlib import Figure, percentile

import acp_trace
from acp_trace.demo.client import ClientOptions, run_client

SAMPLES = benchlib.ROOT / "sample_traces"
REAL = "0198c0de-0000-7000-8000-000000000200"
# sample -> (protocol, session, resumes): the demo-client options it was recorded with
DEFAULT = {
    "claude-agent-acp-v2-resume": (2, REAL, 1),
    "codex-acp-ts-v2-resume": (2, REAL, 1),
    "codex-acp-ts-v1-load": (1, REAL, 1),
    "codex-acp-rs-v1-load": (1, REAL, 1),
    "gemini-cli-v1-load": (1, REAL, 1),
    "demo-v2-cold-start": (2, "sess_v2_cold_start", 5),
    "demo-v2-children": (2, "sess_v2_children", 1),
}
# the demo samples open their session and prompt on it first (sample_traces/README.md)
DEMO_PROMPTS = ("Summarize the replayed history in one line.",)
FROM_REQUEST = ["first_update_ms", "marker_ms", "last_history_ms", "state_ms", "response_ms"]
GAPS = ["marker_to_response_ms", "last_history_to_response_ms"]
P50_MS, P90_MS = 5.0, 25.0  # the tolerance docs/mock.md states, for |delta|


def round_trip(name: str, out: Path, speed: str) -> None:
    protocol, session, resumes = DEFAULT[name]
    acp = (sys.executable, "-m", "acp_trace")
    mock = (*acp, "mock", "--speed", speed, str(SAMPLES / f"{name}.jsonl"))
    opts = ClientOptions(
        command=(*acp, "record", "-o", str(out), "--", *mock),
        protocol=protocol,
        session=session,
        resumes=resumes,
        prompts=DEMO_PROMPTS if name.startswith("demo-") else (),
        cwd="/home/user/project",
        timeout=120,
        grace=10,
    )
    result = run_client(opts)
    if not result.finished:
        raise RuntimeError(f"{name}: the client did not finish: {result.problem}")


def deltas(name: str, again: Path, speed: float) -> dict[str, list[tuple[float, float]]]:
    """Per field: (original / speed, mock - original / speed) for each replay row."""
    fields = FROM_REQUEST + GAPS
    before = acp_trace.replays([SAMPLES / f"{name}.jsonl"]).select(fields).to_dicts()
    after = acp_trace.replays([again]).select(fields).to_dicts()
    if len(before) != len(after):
        raise RuntimeError(f"{name}: {len(after)} replay rows, the original has {len(before)}")
    out: dict[str, list[tuple[float, float]]] = {f: [] for f in fields}
    for old, new in zip(before, after, strict=True):
        for field in fields:
            if old[field] is not None and new[field] is not None:
                expected = old[field] / speed
                out[field].append((expected, new[field] - expected))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("samples", nargs="*", default=list(DEFAULT))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--speed", default="1")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    speed = float(args.speed)
    load_before = os.getloadavg()
    samples: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as work:
        for rep, name in benchlib.rounds(args.samples, args.reps):
            out = Path(work) / f"{name}-{rep}.jsonl"
            round_trip(name, out, args.speed)
            for field, pairs in deltas(name, out, speed).items():
                samples.setdefault(field, []).extend(pairs)
    figures = []
    worst: dict[str, Any] = {}
    for field, pairs in samples.items():
        if not pairs:
            continue
        size = [abs(d) for _, d in pairs]
        for q, limit in ((50, P50_MS), (90, P90_MS), (99, None)):
            value = percentile(size, q)
            target, met = ("-", None) if limit is None else (f"<= {limit:g} ms", value <= limit)
            figures.append(Figure(f"{field} |delta| p{q}", value, target, met, " ms"))
        late = min(d for _, d in pairs)
        figures.append(
            Figure(f"{field} |delta| max", max(size), "-", None, " ms", f"{len(size)} rows")
        )
        if field in FROM_REQUEST:
            figures.append(
                Figure(f"{field} smallest delta", late, ">= 0 ms", late >= -0.001, " ms")
            )
        worst[field] = max(pairs, key=lambda p: abs(p[1]))
    extra = {
        "speed": speed,
        "reps": args.reps,
        "samples": args.samples,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "worst": worst,
    }
    benchlib.report("mock timing fidelity", figures, extra, args.json)
    print(f"load average before {load_before}, after {extra['load_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
