"""The cost of JSON Schema validation in `acp-trace check` (docs/performance.md, "Schema
validation"), in two parts:

    python benchmarks/bench_schema.py validators --mb 5      # jsonschema-rs, fastjsonschema, jsonschema
    python benchmarks/bench_schema.py budget --mb 100        # check with / without validation

`validators` compiles the types the messages of a generated trace need with each library
(once per type) and validates every message's params or result with each, in interleaved
rounds; all three must agree on every message. `budget` runs `check` on a generated trace in
child processes, with validation (the default) and with `--no-schema`, interleaved; the
target is a ratio of at most 1.5.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import Figure, median, python, report, rounds, run_child

HERE = Path(__file__).resolve().parent
LIBRARIES = ("jsonschema-rs", "fastjsonschema", "jsonschema")


def generate(mb: float, folder: Path, history: int | None = None) -> Path:
    """A trace of about `mb` MB from gen_trace.py (its own random seed: the same every run);
    `history`: replayed updates per resume (short ones: more prompts, permissions, errors)."""
    folder.mkdir(parents=True, exist_ok=True)
    import subprocess

    argv = [python(), str(HERE / "gen_trace.py"), "--mb", str(mb), "--out", str(folder)]
    argv += ["--history", str(history)] if history else []
    subprocess.run(argv, check=True, capture_output=True)
    return folder / "trace.jsonl"


def messages(path: Path) -> list[tuple[str, Any]]:
    """(type, value) of every message of a trace that the v2 schema has a type for."""
    import polars as pl

    import acp_trace
    from acp_trace.analysis.schema import schema
    from acp_trace.analysis.schema.catalog import PARTS
    from acp_trace.jsonrpc import loads

    tl = acp_trace.analyze(path).timeline
    rows = tl.filter(pl.col("kind").is_in(list(PARTS)), pl.col("src").is_in(["client", "agent"]))
    out = []
    for kind, src, method, answered, text in rows.select(
        "kind", "src", "method", "request_method", "msg"
    ).iter_rows():
        name = schema(2).type_for(kind, src, answered if kind == "response" else method)
        if name is not None:
            out.append((name, loads(text).get(PARTS[kind])))
    return out


def compile_all(library: str, names: set[str]) -> dict[str, Any]:
    """One compiled validator per type: a callable value -> bool."""
    from acp_trace.analysis.schema import schema

    doc = schema(2).doc
    if library == "jsonschema-rs":
        compiled = {n: schema(2).validator(n) for n in names}
        return {n: v.is_valid for n, v in compiled.items()}
    wrap = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": doc["$defs"]}
    if library == "fastjsonschema":
        import fastjsonschema

        out = {}
        for n in names:
            check = fastjsonschema.compile({**wrap, "$ref": f"#/$defs/{n}"})
            out[n] = _fast(check, fastjsonschema.JsonSchemaException)
        return out
    import jsonschema

    return {
        n: jsonschema.Draft202012Validator({**wrap, "$ref": f"#/$defs/{n}"}).is_valid for n in names
    }


def _fast(check: Any, error: type[Exception]) -> Any:
    def is_valid(value: Any) -> bool:
        try:
            check(value)
        except error:
            return False
        return True

    return is_valid


def validators(args: argparse.Namespace) -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        every = messages(generate(args.mb, Path(tmp), history=200))
    # an even sample across the trace, so that every kind of message is in it
    msgs = every[:: max(1, len(every) // args.messages)][: args.messages]
    names = {n for n, _ in msgs}
    compile_s: dict[str, float] = {}
    checkers: dict[str, Any] = {}
    for library in LIBRARIES:
        start = time.perf_counter()
        checkers[library] = compile_all(library, names)
        compile_s[library] = time.perf_counter() - start
    times: dict[str, list[float]] = {lib: [] for lib in LIBRARIES}
    verdicts: dict[str, list[bool]] = {}
    for _rep, library in rounds(LIBRARIES, args.reps):
        check = checkers[library]
        start = time.perf_counter()
        verdicts[library] = [check[n](v) for n, v in msgs]
        times[library].append(time.perf_counter() - start)
    agree = len({tuple(v) for v in verdicts.values()}) == 1
    if not agree:
        raise SystemExit("the validators disagree on some message")
    base = median(times["jsonschema-rs"])
    figures = [
        Figure(f"{lib}: validate {len(msgs)} messages", median(times[lib]), "-", None, " s")
        for lib in LIBRARIES
    ]
    figures += [
        Figure(f"{lib}: compile {len(names)} types", compile_s[lib], "-", None, " s")
        for lib in LIBRARIES
    ]
    figures += [
        Figure(f"{lib} / jsonschema-rs, validation time", median(times[lib]) / base, "-", None)
        for lib in LIBRARIES[1:]
    ]
    return figures


def child(variant: str, path: str) -> dict[str, Any]:
    import acp_trace

    start = time.perf_counter()
    a = acp_trace.analyze(path)
    found = a.findings(schema=variant == "schema")
    return {"seconds": time.perf_counter() - start, "findings": found.height}


def budget(args: argparse.Namespace) -> list[Figure]:
    variants = ("schema", "no-schema")
    with tempfile.TemporaryDirectory() as tmp:
        path = generate(args.mb, Path(tmp))
        size = path.stat().st_size / 1e6
        seconds: dict[str, list[float]] = {v: [] for v in variants}
        for _rep, variant in rounds(variants, args.reps):
            run = run_child([python(), __file__, "--child", variant, str(path)])
            seconds[variant].append(run.out["seconds"])
    with_schema, without = median(seconds["schema"]), median(seconds["no-schema"])
    ratio = with_schema / without
    return [
        Figure(f"check of {size:.0f} MB, with validation", with_schema, "-", None, " s"),
        Figure(f"check of {size:.0f} MB, --no-schema", without, "-", None, " s"),
        Figure("check with / without validation", ratio, "at most 1.5", ratio <= 1.5),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("part", nargs="?", choices=["validators", "budget", "all"], default="all")
    parser.add_argument(
        "--mb", type=float, default=None, help="trace size in MB (5 / 100 by default)"
    )
    parser.add_argument("--reps", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument(
        "--messages", type=int, default=20000, help="messages the validators check (20000)"
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    figures: list[Figure] = []
    parts = ["validators", "budget"] if args.part == "all" else [args.part]
    for part in parts:
        mb = args.mb if args.mb is not None else (5.0 if part == "validators" else 100.0)
        figures += (validators if part == "validators" else budget)(
            argparse.Namespace(mb=mb, reps=args.reps, messages=args.messages)
        )
    report("schema validation", figures, {"args": vars(args)}, args.json)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
