"""explain_replay says what a client would have suffered (mcpserver/weight.py): the largest line
and its limit, the longest silence and its deadline, the quiet-window end and the updates after
it; bounded (kinds listed at most five, a title cut) and redacted like every answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import orjson

from acp_trace.mcpserver import server
from acp_trace.mcpserver.store import Store
from acp_trace.weight import DEFAULT
from test_credentials import GITHUB
from tracebuilder import TraceBuilder

KINDS = ("agent_message_chunk", "user_message_chunk", "agent_thought_chunk", "plan",
         "terminal_output_chunk", "tool_call_content_chunk")  # fmt: skip


def weighty(path: Path, title: str = "Run the tests", kinds: int = 2) -> Path:
    """A resume: `kinds` kinds of update, a 400 ms pause, a 2.5 s silence, a tool output over
    64 KiB named by its tool_call's title; marker, response."""
    b = TraceBuilder()
    rid = b.resume("s1")
    for i in range(6):
        b.update("s1", KINDS[i % kinds] if kinds > 2 else "agent_message_chunk",
                 dt=400.0 if i == 3 else 1.0, content={"type": "text", "text": "w"})  # fmt: skip
    b.update("s1", "tool_call", toolCallId="c1", title=title, status="pending", dt=2500.0)
    b.update("s1", "tool_call_update", toolCallId="c1", status="completed",
             content=[{"type": "content", "content": {"type": "text", "text": "x" * 70_000}}])  # fmt: skip
    b.marker("s1")
    b.response(rid)
    return b.write(path)


def suffered(path: Path) -> dict[str, Any]:
    """explain_replay's `what_a_client_would_suffer` on one trace, by a server in process."""
    built = server.build(Store([str(path)]))

    async def main() -> Any:
        return await built.call_tool("explain_replay", {})

    result = anyio.run(main)
    assert not result.is_error, result.content[0].text
    said = orjson.loads(result.content[0].text)["what_a_client_would_suffer"]
    assert isinstance(said, dict)
    return said


def test_the_answer_names_the_line_the_silence_and_the_quiet_window(tmp_path: Path) -> None:
    """A few sentences, each with its number and the threshold it passes."""
    said = suffered(weighty(tmp_path / "t.jsonl"))
    who = {t.name: t.clients for t in DEFAULT.limits + DEFAULT.deadlines}
    assert said["largest_line"].startswith('tool_call_update "Run the tests", 70,')
    assert said["largest_line"].endswith("longer than the 64 KiB limit of " + who["64 KiB"])
    assert said["longest_silence"] == (
        "2,500 ms with no line from the agent: past the 2 s deadline of " + who["2 s"]
    )
    assert said["quiet_window"].startswith(
        "a client that takes the replay for over after 250 ms with no update (at most "
        "10,000 ms after the request) would have stopped at "
    )
    assert (
        said["updates_after_quiet_end"] == 5
    )  # 3 chunks after the pause, the tool call, its update
    assert said["quiet_window"].endswith("taken the 5 history updates after it for live ones")
    assert said["limits"][0] == "64 KiB" and said["deadlines"][0] == "2 s"


def test_the_answer_is_bounded(tmp_path: Path) -> None:
    """Six kinds of update: five listed, one left out; a 1,000-character title cut to 120."""
    said = suffered(weighty(tmp_path / "t.jsonl", title="T" * 1000, kinds=6))
    assert len(said["bytes_by_kind"]) == 5 and said["kinds_left_out"] == 3
    assert '"' + "T" * 120 + '"' in said["largest_line"] and "T" * 121 not in said["largest_line"]


def test_the_answer_is_redacted(tmp_path: Path) -> None:
    """A credential in the tool's title is replaced, as in every answer."""
    said = suffered(weighty(tmp_path / "t.jsonl", title=f"curl -H 'token {GITHUB}'"))
    assert GITHUB not in said["largest_line"] and said["largest_line"].startswith(
        "tool_call_update"
    )
