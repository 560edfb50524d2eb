"""Numbers as a person reads them (`acp_trace.quantities`): thousands separators, the precision
each kind of number keeps, and no `-0`."""

from __future__ import annotations

import pytest

from acp_trace import quantities as q


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (lambda: q.count(19019), "19,019"),
        (lambda: q.count(-1200), "-1,200"),
        (lambda: q.counted(1, "replay"), "1 replay"),
        (lambda: q.counted(1200, "history update"), "1,200 history updates"),
        (lambda: q.counted(2, "box", "boxes"), "2 boxes"),
        (lambda: q.ms(19019.5), "19,019.5"),
        (lambda: q.ms(10646.0), "10,646.0"),
        (lambda: q.ms(87.32), "87.3"),
        (lambda: q.ms(0.4123), "0.412"),
        (lambda: q.duration(1359.46), "1,359 ms"),
        (lambda: q.duration(12.34), "12.3 ms"),
        (lambda: q.duration(0.0), "0 ms"),
        (lambda: q.fixed(2033.5551, 3), "2,033.555"),
        (lambda: q.fixed(12000.0, 1, sign=True), "+12,000.0"),
        (lambda: q.trimmed(1327.0), "1,327"),
        (lambda: q.trimmed(1500.25), "1,500.25"),
        (lambda: q.trimmed(-0.0000001, 6), "0"),
        (lambda: q.percent(100.0), "+100%"),
        (lambda: q.percent(-1250.4), "-1,250%"),
        (lambda: q.percent(-0.19), "0%"),
        (lambda: q.seconds(1234.5), "1,234.500 s"),
        (lambda: q.size(512), "512 B"),
        (lambda: q.size(5 * 1024 * 1024 * 1024), "5,120.0 MB"),
    ],
)
def test_numbers_people_read(call: object, text: str) -> None:
    """Each helper writes what the docs promise (docs/outputs.md, Numbers people read)."""
    assert call() == text  # type: ignore[operator]
