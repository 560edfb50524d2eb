"""HTTP headers and request targets of a remote recording are redacted like a command line:
the credential replaced, its name (and an Authorization scheme) kept."""

from __future__ import annotations

import pytest

from acp_trace.redaction.http import scrub_body, scrub_header, scrub_target


@pytest.mark.parametrize(
    ("name", "value", "recorded"),
    [
        ("Authorization", "Bearer abc.def", "Bearer <redacted>"),
        ("proxy-authorization", "Basic dXNlcjpwYXNz", "Basic <redacted>"),
        ("Authorization", "opaque", "<redacted>"),
        ("Cookie", "sid=1; theme=dark", "sid=<redacted>; theme=<redacted>"),
        ("Set-Cookie", "sid=xyz; Path=/; HttpOnly", "sid=<redacted>; Path=/; HttpOnly"),
        ("X-Api-Key", "k-123", "<redacted>"),
        (
            "Referer",
            "https://u:pw@h/p?token=t1&x=1",
            "https://u:<redacted>@h/p?token=<redacted>&x=1",
        ),
        ("User-Agent", "sdk ghp_" + "a" * 36, "sdk <redacted:github-pat>"),
        ("Acp-Session-Id", "sess-1", "sess-1"),
        ("Content-Type", "application/json", "application/json"),
    ],
)
def test_headers(name: str, value: str, recorded: str) -> None:
    assert scrub_header(name, value) == recorded


def test_free_text_credentials_stay_without_content_redaction() -> None:
    """--no-redact-content keeps credentials in free text; the named ones still go."""
    token = "ghp_" + "a" * 36
    assert scrub_header("User-Agent", token, content=False) == token
    assert scrub_header("Authorization", f"Bearer {token}", content=False) == "Bearer <redacted>"
    assert scrub_body(f'{{"error":"bad {token}"}}', content=False).endswith(f'{token}"}}')


@pytest.mark.parametrize(
    ("target", "recorded"),
    [
        ("/acp?token=abc&x=1", "/acp?token=<redacted>&x=1"),
        ("/acp?api_key=k#f", "/acp?api_key=<redacted>#f"),
        ("/acp", "/acp"),
        ("*", "*"),
    ],
)
def test_targets(target: str, recorded: str) -> None:
    assert scrub_target(target) == recorded


def test_an_error_body_has_its_credentials_replaced() -> None:
    assert scrub_body('{"error":"token ghp_' + "b" * 36 + ' expired"}') == (
        '{"error":"token <redacted:github-pat> expired"}'
    )
