"""The remote recorder between the official SDKs' clients and servers, run inside one
loopback-only network namespace (netns-run.sh) by test_remote_peers.py: each server started
once, then per scenario a recorder (`acp-trace record --listen 127.0.0.1:0 --upstream URL -o
OUT/NAME.jsonl`), one client through it, and a SIGTERM to the recorder. Prints one JSON line:
per scenario the client's summary, its exit code and the recorder's.

usage: python remote_run.py OUT NODE NODE_MODULES SDK_PYTHON SCENARIO...
       a SCENARIO is SERVER-CLIENT-TRANSPORT[-cut] (ts, py or pyh2: the Python app on hypercorn;
       http, ws or h2c), e.g. ts-ts-http;
       the client `drive` is `acp-trace drive` playing tests/data/remote/ts-http.jsonl's
       client side through `acp-trace bridge URL` (its own trace: OUT/NAME-drive.jsonl); the
       client `bad` sends session/new before initialize through the bridge;
       `-cut` prompts `cut`, after which the server cuts the replay short (run those last:
       the TypeScript server drops every connection, the Python one dies).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDING = HERE.parents[1] / "tests" / "data" / "remote" / "ts-http.jsonl"
READY = re.compile(r" at (\S+):(\d+) \(Ctrl-C ends it\)")


def start_server(
    kind: str, node: str, modules: str, sdk_python: str
) -> tuple[subprocess.Popen[bytes], int]:
    argv = (
        [node, str(HERE / "remote_ts.mjs"), "server", modules]
        if kind == "ts"
        else [
            sdk_python,
            str(HERE / "remote_py.py"),
            "server",
            *(["h2c"] if kind == "pyh2" else []),
        ]
    )
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    line = process.stdout.readline()
    return process, json.loads(line)["port"]


def record(out: Path, name: str, upstream: str) -> tuple[subprocess.Popen[bytes], str]:
    argv = [sys.executable, "-m", "acp_trace", "record", "--listen", "127.0.0.1:0"]
    argv += ["--upstream", upstream, "-o", str(out / f"{name}.jsonl")]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE)
    assert process.stderr is not None
    line = process.stderr.readline().decode()
    found = READY.search(line)
    if found is None:
        raise SystemExit(f"the recorder did not start: {line}")
    return process, f"{found.group(1)}:{found.group(2)}"


def run_client(
    kind: str,
    address: str,
    transport: str,
    cut: bool,
    node: str,
    modules: str,
    sdk_python: str,
    out: Path,
) -> tuple[int, dict[str, object] | str]:
    scheme = "ws" if transport == "ws" else "http"
    url = f"{scheme}://{address}/acp"
    argv = (
        [node, str(HERE / "remote_ts.mjs"), "client", modules, url, transport]
        if kind == "ts"
        else [sdk_python, str(HERE / "remote_py.py"), "client", url, transport]
    )
    env = {**os.environ, "REMOTE_PROMPT": "cut" if cut else "hello"}
    if kind == "bad":  # a WebSocket whose first message is no initialize, through the bridge
        bad = b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}\n'
        bridge = [sys.executable, "-m", "acp_trace", "bridge", url]
        done = subprocess.run(bridge, input=bad, capture_output=True, timeout=120, check=False)
        return done.returncode, {"stdout": done.stdout.decode(), "stderr": done.stderr.decode()}
    if kind == "drive":
        drive = [sys.executable, "-m", "acp_trace", "drive", str(RECORDING), "-o", str(out)]
        bridge = [sys.executable, "-m", "acp_trace", "bridge", url]
        done = subprocess.run(
            [*drive, "--", *bridge], capture_output=True, timeout=120, env=env, check=False
        )
        return done.returncode, {
            "stdout": done.stdout.decode(),
            "stderr": done.stderr.decode()[-2000:],
        }
    done = subprocess.run(argv, capture_output=True, timeout=120, env=env, check=False)
    lines = done.stdout.decode().splitlines()
    return done.returncode, json.loads(lines[-1]) if lines else done.stderr.decode()[-2000:]


def main() -> None:
    out, node, modules, sdk_python, *scenarios = sys.argv[1:]
    servers: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
    results: dict[str, object] = {}
    recorder: subprocess.Popen[bytes] | None = None
    try:
        for name in scenarios:
            server, client, transport, *rest = name.split("-")
            if server not in servers:
                servers[server] = start_server(server, node, modules, sdk_python)
            scheme = "ws" if transport == "ws" else "http"
            recorder, address = record(
                Path(out), name, f"{scheme}://127.0.0.1:{servers[server][1]}/acp"
            )
            drive_out = Path(out) / f"{name}-drive.jsonl"
            code, summary = run_client(
                client, address, transport, bool(rest), node, modules, sdk_python, drive_out
            )
            recorder.send_signal(signal.SIGTERM)
            _out, err = recorder.communicate(timeout=60)
            results[name] = {
                "client": summary,
                "client_exit": code,
                "recorder_exit": recorder.returncode,
                "recorder_stderr": err.decode(),
            }
    finally:  # nothing of ours may outlive the run: it would hold the caller's pipes open
        if recorder is not None and recorder.poll() is None:
            recorder.kill()
        for process, _port in servers.values():
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
