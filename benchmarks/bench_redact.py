"""What redaction costs the writer process (issue 26): CPU time to encode the burst lines of
bench_tap.py (`session/update` chunks), and lines that hold a credential keyword, with this
tree's Redactor and with another tree's (`--baseline SRC`), interleaved in one run; ratios.

    .venv/bin/python benchmarks/bench_redact.py --baseline /tmp/base/src
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

WORKER = """
import sys, time, json
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
from echo_agent import message
from acp_trace.redaction.redactor import Redactor
size, total, kind = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
line = message(0, size).rstrip(b"\\n")
if kind == "keyword":  # a file read answered: words the prefilter stops at, no credential
    text = ("path = Path(key).read_text(); token_count += 1; see https://example.test/x\\n" * size)[: size - 60]
    line = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": text}}).encode()
count = max(1, total // len(line))
redactor = Redactor()
for src in ("agent", "client"):
    redactor.line_payload(line, src)
start = time.process_time()
for _ in range(count):
    redactor.line_payload(line, "agent" if kind == "burst" else "client")
print(json.dumps({"seconds": time.process_time() - start, "bytes": count * len(line)}))
"""


def run(src: str, size: int, total: int, kind: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, src, str(HERE), str(size), str(total), kind],
        capture_output=True,
        text=True,
        check=True,
        timeout=1200,
    )
    result = json.loads(done.stdout)
    return result["bytes"] / result["seconds"] / 1e6  # MB/s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="another tree's src/")
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 4096, 1 << 20])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    total = int(args.mb * 1e6)
    for kind in ("burst", "keyword"):
        for size in args.sizes:
            rates: dict[str, list[float]] = {"this": [], "base": []}
            for _ in range(args.reps):  # interleaved: the machine's load hits both alike
                rates["this"].append(run(str(SRC), size, total, kind))
                rates["base"].append(run(args.baseline, size, total, kind))
            this, base = max(rates["this"]), max(rates["base"])
            print(
                f"{kind:8} {size:>8} B lines: this {this:8.1f} MB/s, base {base:8.1f} MB/s,"
                f" ratio {this / base:.3f} (best of {args.reps} runs of CPU time)"
            )


if __name__ == "__main__":
    main()
