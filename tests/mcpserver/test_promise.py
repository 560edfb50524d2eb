"""The promise of docs/mcp.md, kept through the official SDK's client over stdio: the server
reads only the served folders' own regular files and quotes no file that is no trace, every
answer goes through the redaction of `export`, every answer and error is bounded and says
what it left out, bad arguments are answered at once, nothing is written (matplotlib
included), and it ends on EOF, SIGTERM and SIGINT."""

from __future__ import annotations

import base64
import os
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult
from typer.testing import CliRunner

from acp_trace import analyze
from acp_trace.cli import app
from acp_trace.mcpserver.charts import PLOT_CHARS
from acp_trace.mcpserver.paging import MAX_CHARS
from acp_trace.mcpserver.refusals import ERROR_CHARS
from test_credentials import ANTHROPIC, GITHUB, JWT, OPENAI
from testpaths import SAMPLES
from tracebuilder import TraceBuilder

HANG_GUARD = 300  # seconds: a hung server fails the test instead of the suite
CLAUDE = "claude-agent-acp-v2-resume.jsonl"
Script = Callable[[ClientSession], Awaitable[Any]]


def serve(
    tmp_path: Path, args: list[str], script: Script, env: dict[str, str] | None = None
) -> Any:
    """Run `script` on a client session of `acp-trace mcp ARGS` (cwd tmp_path/cwd, a private
    HOME unless `env` says otherwise); the server's stderr is kept in tmp_path/server.err."""
    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    base = {"HOME": str(home), "MPLCONFIGDIR": str(home / "mpl"), "XDG_STATE_HOME": str(home)}
    if "PYTHONPATH" in os.environ:
        base["PYTHONPATH"] = os.environ["PYTHONPATH"]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "acp_trace", "mcp", *args], cwd=str(cwd),
        env=base if env is None else env,
    )  # fmt: skip

    async def main() -> Any:
        with (tmp_path / "server.err").open("w") as errlog, anyio.fail_after(HANG_GUARD):
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                return await script(s)

    return anyio.run(main)


def text(result: CallToolResult) -> str:
    assert result.content[0].type == "text"
    return result.content[0].text


def answer(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(orjson.loads(text(result)))


def test_only_the_folders_own_regular_files_are_read(tmp_path: Path) -> None:
    """Links out of the folder (to /etc/passwd, a token file, a trace) and a pipe are passed
    over by name, a stray log is listed without a word of what it holds, and an empty folder
    served beside it fails no call."""
    folder, outside, empty = tmp_path / "traces", tmp_path / "outside", tmp_path / "empty"
    for d in (folder, outside, empty):
        d.mkdir()
    shutil.copy(SAMPLES / CLAUDE, folder)
    (folder / "debug.log").write_text(f"OPENAI_API_KEY={OPENAI}\n")
    (outside / "token.txt").write_text(f"{GITHUB}\n")
    shutil.copy(SAMPLES / "demo-v2-complete.jsonl", outside / "other.jsonl")
    (folder / "passwd.log").symlink_to("/etc/passwd")
    (folder / "token.log").symlink_to(outside / "token.txt")
    (folder / "other.jsonl").symlink_to(outside / "other.jsonl")
    os.mkfifo(folder / "pipe.jsonl")  # read, it would never end

    async def script(s: ClientSession) -> Any:
        calls = ["list_traces", "summary", "replays", "findings", "timeline", "latency"]
        return [await s.call_tool(name, {"limit": 500}) for name in calls[:1]] + [
            await s.call_tool(name, {}) for name in calls[1:]
        ]

    results = serve(tmp_path, [str(folder), str(empty)], script)
    for result in results:
        body = text(result)
        assert not result.is_error, body
        for leak in ("sk-proj", "OPENAI_API_KEY", "root:x", "ghp_", "sess_demo"):
            assert leak not in body, leak
    listed = answer(results[0])
    assert [r["trace"] for r in listed["rows"]] == [CLAUDE] and listed["total"] == 1
    problems = {f["file"]: f["problem"] for f in listed["skipped_files"]}
    assert set(problems) == {"debug.log", "passwd.log", "token.log", "other.jsonl", "pipe.jsonl"}
    assert problems["token.log"].startswith("a symbolic link: not followed")
    assert problems["pipe.jsonl"].startswith("not a regular file")
    assert "not quoted" in problems["debug.log"]
    assert answer(results[2])["total"] == analyze(SAMPLES / CLAUDE).replays.height


def secret_trace(path: Path) -> Path:
    """A trace recorded before redaction existed: an Anthropic key in a prompt, a GitHub token
    in the env of an MCP server, an OpenAI key and a JWT on stderr inside a replay's gap."""
    b = TraceBuilder(agent="agent", version="1.0")
    env = [{"name": "GITHUB_TOKEN", "value": GITHUB}]
    servers = [{"name": "gh", "command": "gh-mcp", "args": [], "env": env}]
    b.response(b.request("session/new", {"cwd": "/w", "mcpServers": servers}), {"sessionId": "s1"})
    prompt = [{"type": "text", "text": f"use {ANTHROPIC} please"}]
    b.response(b.request("session/prompt", {"sessionId": "s1", "prompt": prompt}), {})
    rid = b.resume("s1")
    b.history("s1", 2)
    b.text("stderr", f"calling the model with {OPENAI}")
    b.text("stderr", f"session token {JWT}")
    b.response(rid, {}, dt=50)
    return b.write(path)


SECRETS = (ANTHROPIC, GITHUB, OPENAI, JWT, "T3BlbkFJ", "ghp_", "sk-ant-")


def test_every_answer_is_redacted_as_export_is(tmp_path: Path) -> None:
    """timeline (with and without contents), explain_replay and the other tools quote no
    credential of an old trace; `acp-trace export` of the same trace holds none either."""
    trace = secret_trace(tmp_path / "old.jsonl")

    async def script(s: ClientSession) -> Any:
        return [
            await s.call_tool("timeline", {"include_contents": True, "limit": 500}),
            await s.call_tool("timeline", {"limit": 500}),
            await s.call_tool("explain_replay", {}),
            await s.call_tool("replays", {}),
            await s.call_tool("findings", {"limit": 500}),
            await s.call_tool("list_traces", {}),
            await s.call_tool("summary", {}),
        ]

    results = serve(tmp_path, [str(trace)], script)
    for result in results:
        body = text(result)
        assert not result.is_error, body
        assert all(secret not in body for secret in SECRETS), body
    contents = text(results[0])
    assert contents.count("<redacted") >= 4 and "please" in contents
    why = answer(results[2])
    assert any(
        "calling the model with <redacted" in line for line in why["gap_stderr"]["last_lines"]
    )
    out = tmp_path / "export"
    done = CliRunner().invoke(app, ["export", str(trace), "-f", "csv", "-o", f"{out}/"])
    assert done.exit_code == 0, done.output
    exported = "".join(p.read_text() for p in out.glob("*.csv"))
    assert "please" in exported and all(secret not in exported for secret in SECRETS)


def crowded(folder: Path) -> None:
    """A folder whose answers would be huge: a replay with 400 child sessions, a session id of
    200,000 characters, and 1,500 stray files."""
    b = TraceBuilder()
    rid = b.resume("p", dt=0)
    b.history("p", 1)
    for n in range(400):
        b.update("p", "subagent_update", sessionId=f"child-{n:03}")
        b.history(f"child-{n:03}", 1)
    b.response(rid, {}, dt=10)
    b.write(folder / "kids.jsonl")
    long = TraceBuilder()
    big = "s" * 200_000
    rid = long.resume(big)
    long.history(big, 2)
    long.response(rid, {}, dt=10)
    long.write(folder / "long.jsonl")
    for n in range(1_500):
        (folder / f"stray-{n:04}.log").write_text("not a trace\n")


HUGE = "y" * 100_000


def test_every_answer_and_error_is_bounded(tmp_path: Path) -> None:
    """No answer is over MAX_CHARS and no error over ERROR_CHARS (a 100,000-character argument
    is not echoed whole); each says what it left out; a plot says what it costs."""
    folder = tmp_path / "traces"
    folder.mkdir()
    crowded(folder)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_traces", {"limit": 500}),
        ("summary", {"limit": 500}),
        ("explain_replay", {"trace": "kids.jsonl"}),
        ("replays", {"limit": 500}),
        ("timeline", {"limit": 500, "include_contents": True}),
        ("findings", {"limit": 500}),
        ("replays", {"agent": HUGE}),
        ("explain_replay", {"session": HUGE}),
        ("timeline", {"session": HUGE}),
        ("diff", {"base": [HUGE], "new": ["kids.jsonl"]}),
        ("no_such_tool_" + HUGE, {}),
    ]

    async def script(s: ClientSession) -> Any:
        plot = await s.call_tool("plot", {"kind": "replay", "trace": "kids.jsonl"})
        return [await s.call_tool(name, args) for name, args in calls], plot

    results, plot = serve(tmp_path, [str(folder)], script)
    by_name = {}
    for (name, _args), result in zip(calls, results, strict=True):
        body = text(result)
        limit = len("acp-trace: ") + ERROR_CHARS + 60 if result.is_error else MAX_CHARS
        assert len(body) <= limit, (name[:30], len(body))
        if result.is_error:
            assert "more characters left out" in body or HUGE[:200] not in body, name[:30]
        by_name.setdefault(name[:30], []).append(body)
    listed = answer(results[0])
    assert listed["skipped_files_left_out"] == 1_500 - len(listed["skipped_files"])
    why = answer(results[2])
    assert "401 items" in why["cut_to_fit"]["sessions"]
    assert answer(results[4])["next_cursor"] is not None  # the rest, a page at a time
    assert "more characters left out" in text(results[7])
    data = plot.content[0].data
    caption = plot.content[1].text
    assert len(data) <= PLOT_CHARS and f"({len(data):,} base64 characters" in caption
    assert base64.b64decode(data)[:4] == b"\x89PNG"


def cursor(offset: int, real: str) -> str:
    """`real` (a cursor the server gave) with its offset forged."""
    raw = orjson.loads(base64.urlsafe_b64decode(real + "=" * (-len(real) % 4)))
    text = f'{{"o":{offset},"q":"{raw["q"]}","v":"{raw["v"]}"}}'  # beyond what orjson writes
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def test_bad_arguments_are_answered_at_once(tmp_path: Path) -> None:
    """A forged cursor offset (10^30, negative, past the end) and an unknown argument are each
    one line saying what was expected, with no traceback; the server goes on."""

    async def script(s: ClientSession) -> Any:
        first = answer(await s.call_tool("replays", {"limit": 1}))["next_cursor"]
        return [
            await s.call_tool("replays", {"limit": 1, "cursor": cursor(10**30, first)}),
            await s.call_tool("replays", {"limit": 1, "cursor": cursor(-1, first)}),
            await s.call_tool("replays", {"limit": 1, "cursor": cursor(10**6, first)}),
            await s.call_tool("replays", {"sesion": "s1"}),
            await s.call_tool("replays", {"limit": 1, "cursor": cursor(1, first)}),
        ]

    results = serve(tmp_path, [str(SAMPLES)], script)
    lines = [text(r) for r in results[:-1]]
    assert all(r.is_error and "\n" not in line for r, line in zip(results, lines, strict=False))
    for line in lines[:3]:
        assert "cursor: not a cursor this server gave" in line, line
    assert "unknown argument sesion; expected some of: agent, outcome, session" in lines[3]
    assert answer(results[-1])["offset"] == 1
    assert "Traceback" not in (tmp_path / "server.err").read_text()


def test_nothing_is_written_under_home_or_tmp(tmp_path: Path) -> None:
    """With HOME, every XDG folder and TMPDIR empty and no MPLCONFIGDIR, the charts and the
    answers leave them empty: matplotlib creates no config or cache folder and no font list."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {"HOME": str(home), "TMPDIR": str(tmp), "PATH": os.environ.get("PATH", "")}
    for name in ("CONFIG", "CACHE", "STATE", "DATA", "RUNTIME"):
        env[f"XDG_{name}_HOME" if name != "RUNTIME" else "XDG_RUNTIME_DIR"] = str(home / name)
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]

    async def script(s: ClientSession) -> Any:
        charts = [
            await s.call_tool("plot", {"kind": k}) for k in ("gap", "replay", "weight", "latency")
        ]
        return [*charts, await s.call_tool("summary", {})]

    results = serve(tmp_path, [str(SAMPLES)], script, env=env)
    assert all(not r.is_error for r in results)
    assert list(home.rglob("*")) == [] and list(tmp.rglob("*")) == []
    assert "matplotlib" not in (tmp_path / "server.err").read_text().lower()


HELLO = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
)


def started(tmp_path: Path) -> subprocess.Popen[bytes]:
    """`acp-trace mcp` on the samples, initialized by hand (raw JSON-RPC lines)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "acp_trace", "mcp", str(SAMPLES)], cwd=tmp_path,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "HOME": str(tmp_path), "MPLCONFIGDIR": str(tmp_path)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not inherited ignored
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(HELLO)
    server.stdin.flush()
    assert b'"id":1' in server.stdout.readline()
    server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    server.stdin.flush()
    return server


def test_a_lone_surrogate_is_answered_at_once(tmp_path: Path) -> None:
    """A call whose JSON holds a lone surrogate escape (no SDK client sends one; a host may)
    is answered with one line naming the argument, and the next call is answered too."""
    with started(tmp_path) as server:
        assert server.stdin is not None and server.stdout is not None
        call = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"timeline",'
        out = []
        for n, arguments in ((2, b'{"session":"a\\ud800"}'), (3, b'{"limit":1}')):
            server.stdin.write(call % n + b'"arguments":' + arguments + b"}}\n")
            server.stdin.flush()
            ready = select.select([server.stdout], [], [], HANG_GUARD)[0]
            assert ready, f"call {n}: no answer in {HANG_GUARD} s"
            out.append(orjson.loads(server.stdout.readline()))
        server.stdin.close()
        assert server.wait(HANG_GUARD) == 0
        assert [m["id"] for m in out] == [2, 3]
        refused, answered = (m["result"] for m in out)
        assert refused["isError"] and refused["content"][0]["text"] == (
            "acp-trace: timeline: session: expected text of Unicode characters, got a lone "
            "surrogate (half of a UTF-16 pair)"
        )
        assert not answered.get("isError") and '"returned":1' in answered["content"][0]["text"]


@pytest.mark.parametrize(
    ("how", "code", "said"),
    [
        ("eof", 0, ""),
        ("SIGTERM", 143, "acp-trace: interrupted by SIGTERM; stopped before the end\n"),
        ("SIGINT", 130, "acp-trace: interrupted by SIGINT (Ctrl-C); stopped before the end\n"),
    ],
)
def test_the_server_ends_on_eof_and_signals(tmp_path: Path, how: str, code: int, said: str) -> None:
    """Closing stdin ends the server with 0 and nothing said; SIGTERM and SIGINT end it with
    128+N and one line, no traceback."""
    with started(tmp_path) as server:  # answering: the signal lands in the loop
        assert server.stdin is not None and server.stderr is not None
        if how == "eof":
            server.stdin.close()
        else:
            server.send_signal(getattr(signal, how))
        assert server.wait(HANG_GUARD) == code
        assert server.stderr.read().decode() == said
