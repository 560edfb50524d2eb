"""Bounded answers (acp_trace.mcpserver.paging): the size cap, the cursor, the escapes."""

from __future__ import annotations

import base64

import orjson
import pytest

from acp_trace.errors import UsageError
from acp_trace.mcpserver.paging import MAX_CHARS, Page, bounded, dumps


def rows(n: int, size: int = 10) -> list[dict[str, object]]:
    return [{"i": i, "text": "x" * size} for i in range(n)]


def test_a_page_stops_at_the_size_cap_and_says_what_it_left_out() -> None:
    """Rows of 3,000 characters: a page of limit 50 holds what fits the cap, and left_out
    says how many rows are left and that the cap left them out."""
    text = bounded(rows(50, 3000), Page("t", limit=50), "v1")
    answer = orjson.loads(text)
    assert len(text) <= MAX_CHARS
    assert 0 < answer["returned"] < 50 and answer["total"] == 50
    assert answer["left_out"].startswith(f"{50 - answer['returned']} more rows")
    assert "size cap" in answer["left_out"] and answer["next_cursor"]


def test_one_row_over_the_cap_is_cut_and_says_so() -> None:
    """A single value of a million characters is cut; `cut` gives its whole length."""
    big = [{"seq": 1, "message": {"prompt": "p" * 1_000_000}, "text": "t" * 500_000}]
    text = bounded(big, Page("t"), "v1")
    answer = orjson.loads(text)
    assert len(text) <= MAX_CHARS
    row = answer["rows"][0]
    assert row["seq"] == 1 and set(row["cut"]) >= {"message"}
    assert "1,000,0" in row["cut"]["message"]


def test_escapes_do_not_break_the_cap() -> None:
    """Values made of control characters (six characters each once escaped) still fit."""
    text = bounded([{"text": "\x9b" * 100_000}], Page("t"), "v1")
    assert len(text) <= MAX_CHARS and "\x9b" not in text


def test_following_cursors_gives_every_row_once() -> None:
    """next_cursor resumes after the last row sent, to the end."""
    seen, cursor = [], None
    while True:
        answer = orjson.loads(bounded(rows(23), Page("t", {"a": 1}, cursor, 5), "v1"))
        seen += [r["i"] for r in answer["rows"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert seen == list(range(23))


def test_cursors_are_checked() -> None:
    """Garbage, or a cursor made for other arguments, is refused; one made before the traces
    changed is served with a note."""
    first = orjson.loads(bounded(rows(9), Page("t", {"a": 1}, None, 2), "v1"))
    cursor = first["next_cursor"]
    with pytest.raises(UsageError, match="not a cursor this server gave"):
        bounded(rows(9), Page("t", {"a": 1}, "%%%", 2), "v1")
    with pytest.raises(UsageError, match="made for other arguments of t"):
        bounded(rows(9), Page("t", {"a": 2}, cursor, 2), "v1")
    later = orjson.loads(bounded(rows(9), Page("t", {"a": 1}, cursor, 2), "v2"))
    assert later["offset"] == 2 and "the traces changed" in later["note"]


def test_text_from_a_trace_is_escaped() -> None:
    """C1, bidi and lone surrogates come out as escapes; the value parses back (surrogates
    as visible text)."""
    text = dumps({"s": "a\u202eb\x9bc\x1b", "lone": "x\ud83dy"})
    assert "\u202e" not in text and "\x9b" not in text and "\x1b" not in text
    assert orjson.loads(text) == {"s": "a\u202eb\x9bc\x1b", "lone": "x\\ud83dy"}


def forged(cursor: str, offset: object) -> str:
    """`cursor` with its offset replaced (an integer of any size, or any JSON value)."""
    raw = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    value = str(offset) if isinstance(offset, int) and not isinstance(offset, bool) else (
        orjson.dumps(offset).decode()
    )  # fmt: skip
    text = f'{{"o":{value},"q":"{raw["q"]}","v":"{raw["v"]}"}}'
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize("offset", [10**30, -1, 10, "2", True])
def test_a_forged_offset_is_not_a_cursor_this_server_gave(offset: object) -> None:
    """An offset too big for any table, negative, past the end or not an integer is refused
    as a cursor this server never gave (not blamed on other arguments, never a crash)."""
    cursor = orjson.loads(bounded(rows(9), Page("t", {"a": 1}, None, 2), "v1"))["next_cursor"]
    with pytest.raises(UsageError, match=r"^cursor: not a cursor this server gave"):
        bounded(rows(9), Page("t", {"a": 1}, forged(cursor, offset), 2), "v1")


def test_the_head_of_an_answer_is_cut_to_fit_and_says_what_it_cut() -> None:
    """Facts at the head of 400,000 characters (a long string, a list of 400 items) leave room
    for rows; `cut_to_fit` names each value cut with its whole size."""
    head = {"headline": "h" * 200_000, "sessions": [{"s": "x" * 500} for _ in range(400)], "n": 3}
    text = bounded(rows(5), Page("t"), "v1", head)
    answer = orjson.loads(text)
    assert len(text) <= MAX_CHARS and answer["returned"] == 5 and answer["n"] == 3
    assert answer["cut_to_fit"]["headline"].startswith("200,000 characters, the first")
    assert answer["cut_to_fit"]["sessions"].startswith("400 items, the first")
    assert 0 < len(answer["sessions"]) < 400
