"""How fast `--workers 2` ends on Ctrl-C (SIGINT), SIGTERM and a killed worker (issue 27 item
6, issue 30): the time from the signal to the command's exit, and to the last of its
processes gone, over many small traces (docs/performance.md, "--workers: signals and dead
workers").

    flock /tmp/acp-bench.lock .venv/bin/python benchmarks/bench_interrupt.py \\
        --out /tmp/acp-interrupt --files 4050 --burners 0
    ... --burners 2          # the same with 2 busy loops (nice 0) on the 2 cores

Each run starts `acp-trace COMMAND --workers 2 DIR` with a private handoff directory and
TMPDIR, waits until its workers have started, waits DELAY more (it cycles through --delays,
so the signal lands in different phases of the run), sends the signal (or SIGKILLs a worker)
and measures. Checked on every run: the exit code (130, 143; 0 and the serial output after
a killed worker), the one line on stderr, no process of the run left, no file left in the
handoff directory or TMPDIR. `--baseline SRC` runs the same against another tree's `src`
(the previous code) as a second variant.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import HERE, ROOT, machine, median, python

CLI = """
import sys
from acp_trace.trace import handoff
handoff.SHARED_MEMORY = sys.argv.pop(1)
sys.argv[0] = "acp-trace"
from acp_trace.cli import main
main()
"""
HANG = [120.0]  # seconds: a run that takes longer is reported as a hang (--hang)


def children(pid: int) -> list[int]:
    out = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] not in (b"Z", b"X"):
            out.append(int(entry))
    return out


def descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        for child in children(todo.pop()):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def workers_of(pid: int) -> list[int]:
    """The run's worker processes: its children (forked), or the fork server's (not the
    fork server itself, nor the resource tracker)."""
    out = []
    for child in children(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"forkserver" in cmdline:
            out.extend(children(child))
        elif b"resource_tracker" not in cmdline:
            out.append(child)
    return out


def one(
    src: Path, command: list[str], folder: Path, fault: str, delay: float, work: Path
) -> dict[str, Any]:
    """One run: start, wait for the workers and `delay`, inject `fault`, measure."""
    for sub in ("shm", "tmp", "out"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(src), "TMPDIR": str(work / "tmp")}
    argv = [python(), "-c", CLI, str(work / "shm"), *command, str(folder)]
    with (work / "stdout").open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, env=env)
    started = time.monotonic()
    seen: set[int] = set()
    while len(workers_of(proc.pid)) < 2 and proc.poll() is None:
        time.sleep(0.01)
    time.sleep(delay)
    seen |= descendants(proc.pid)
    if proc.poll() is not None:
        return {"fault": fault, "delay": delay, "ended_first": True}
    sent = time.monotonic()
    if fault == "kill-worker":
        os.kill(max(workers_of(proc.pid) or [proc.pid]), signal.SIGKILL)
    else:
        proc.send_signal(getattr(signal, fault))
    hang = False
    while proc.poll() is None:
        seen |= descendants(proc.pid)
        if time.monotonic() - sent > HANG[0]:
            hang = True
            for p in descendants(proc.pid):
                os.kill(p, signal.SIGKILL)
            proc.kill()
        time.sleep(0.005)
    exited = time.monotonic()
    while any(alive(p) for p in seen) and time.monotonic() - exited < HANG[0]:
        time.sleep(0.005)
    gone = time.monotonic()
    err = proc.stderr.read().decode() if proc.stderr else ""
    return {
        "fault": fault,
        "delay": delay,
        "hang": hang,
        "code": proc.returncode,
        "to_exit": exited - sent,
        "to_gone": gone - sent,
        "since_start": sent - started,
        "left_running": sorted(p for p in seen if alive(p)),
        "left_files": sorted(str(p) for d in ("shm", "tmp") for p in (work / d).rglob("*")),
        "stderr": err.strip().splitlines()[-3:],
        "stdout": (work / "stdout").read_bytes() if fault == "kill-worker" else b"",
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="where to generate the traces")
    parser.add_argument("--traces", type=Path, help="a folder of traces to use instead")
    parser.add_argument("--files", type=int, default=4050)
    parser.add_argument("--mb", type=float, default=17.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--burners", type=int, default=0, help="busy loops meanwhile")
    parser.add_argument("--delays", default="0.5,1.5,3", help="seconds after the workers start")
    parser.add_argument("--commands", default="replays,report")
    parser.add_argument("--faults", default="SIGINT,SIGTERM,kill-worker")
    parser.add_argument("--baseline", type=Path, help="another tree's src, run the same")
    parser.add_argument("--hang", type=float, default=120.0, help="seconds: a hang past it")
    parser.add_argument("--json", help="also write every run to this JSON file")
    args = parser.parse_args()
    HANG[0] = args.hang
    folder = args.traces or args.out / f"traces-{args.files}"
    if not folder.is_dir():
        subprocess.run(
            [python(), str(HERE / "gen_trace.py"), "--mb", str(args.mb), "--files", str(args.files),
             "--history", "40", "--out", str(folder)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    variants = {"this tree": ROOT / "src"}
    if args.baseline:
        variants["baseline"] = args.baseline
    outputs = {
        "replays": ["replays", "--workers", "2"],
        "report": ["report", "--workers", "2", "-o", "OUT/"],
        "plot": ["plot", "--workers", "2", "-o", "OUT/gap.png"],
        "export": ["export", "--workers", "2", "--format", "csv", "-o", "OUT/"],
    }
    serial = subprocess.run(
        [python(), "-m", "acp_trace", "replays", str(folder)],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=True,
    ).stdout
    burners = [
        subprocess.Popen(["nice", "-n", "0", "sh", "-c", "while :; do :; done"])
        for _ in range(args.burners)
    ]
    runs: list[dict[str, Any]] = []
    delays = [float(d) for d in args.delays.split(",")]
    try:
        for rep in range(args.reps):
            for name, src in variants.items():
                for command in args.commands.split(","):
                    for i, fault in enumerate(args.faults.split(",")):
                        delay = delays[(rep + i) % len(delays)]
                        with tempfile.TemporaryDirectory(prefix="acp-int-") as tmp:
                            argv = [a.replace("OUT", tmp + "/out") for a in outputs[command]]
                            run = one(src, argv, folder, fault, delay, Path(tmp))
                        run |= {"variant": name, "command": command}
                        if fault == "kill-worker" and command == "replays":
                            run["same_as_serial"] = run["stdout"] == serial
                        run.pop("stdout", None)
                        runs.append(run)
                        print(json.dumps(run), flush=True)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    print(f"\n== --workers 2, {args.files} traces, {args.burners} burners; {machine()}")
    for name in variants:
        for command in args.commands.split(","):
            for fault in args.faults.split(","):
                mine = [
                    r for r in runs
                    if (r["variant"], r["command"], r["fault"]) == (name, command, fault)
                    and not r.get("ended_first")
                ]  # fmt: skip
                if not mine:
                    continue
                exits = [r["to_exit"] for r in mine]
                gones = [r["to_gone"] for r in mine]
                codes = sorted({r["code"] for r in mine})
                hangs = sum(r["hang"] for r in mine)
                print(
                    f"  {name:<9} {command:<8} {fault:<11} to exit: median {median(exits):.2f} s,"
                    f" max {max(exits):.2f} s; all gone: max {max(gones):.2f} s; codes {codes};"
                    f" hangs {hangs}/{len(mine)}"
                )
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main())
