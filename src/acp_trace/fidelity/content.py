"""Content text and bytes of a message or a tool call, as rules.md "Replay fidelity" reads them.

Content text is the concatenation of the `text` of text blocks, other blocks by their compact
JSON; a tool call's is its last status, then the text blocks of its last `content` list (a
`{"type":"content","content":{...}}` item by its inner block, other items by their compact JSON),
its `rawOutput` (compact JSON) only when it never had `content`.
"""

from __future__ import annotations

from typing import Any

from acp_trace.jsonrpc import json_text


def block_text(block: Any) -> str:
    """One content block as text: a text block's `text`, any other value its compact JSON."""
    if (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ):
        return str(block["text"])
    return json_text(block)


def content_text(content: Any) -> str:
    """A message update's `content` (one block, a list of blocks, or nothing) as text."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(block_text(b) for b in content)
    return block_text(content)


def tool_item_text(item: Any) -> str:
    """One item of a tool call's `content` list: a `content` item by its inner block."""
    if isinstance(item, dict) and item.get("type") == "content" and "content" in item:
        return block_text(item["content"])
    return json_text(item)


def tool_call_text(status: Any, content: Any, raw_output: Any, had_content: bool) -> str:
    """A tool call's content text from its last status, last content list and rawOutput."""
    head = status if isinstance(status, str) else ""
    if had_content:
        items = content if isinstance(content, list) else []
        return head + "".join(tool_item_text(i) for i in items)
    if raw_output is None:
        return head
    return head + json_text(raw_output)


def utf8_len(text: str) -> int:
    """Content bytes: the UTF-8 length of the text (a lone surrogate, which the reader keeps
    from an escape, counts three bytes, as its replacement U+FFFD would)."""
    return len(text.encode("utf-8", "surrogatepass"))
