"""Credentials in free text (acp_trace.credentials): every kind the issue names is found in
running text and only its span replaced, near misses stay, hostile input stays linear."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acp_trace import credentials
from acp_trace.credentials import LineState, gitleaks, names_credential, redact_bytes, redact_str
from testpaths import ROOT

# Fake credentials of each shape, built at run time (no token-shaped literal in the repo).
ANTHROPIC = "sk-ant-api03-" + "aB3_" * 23 + "xAA"
OPENAI = "sk-proj-" + "Ab1-" * 18 + "ab" + "T3BlbkFJ" + "Cd2_" * 18 + "cd"
OPENAI_OLD = "sk-" + "Ab1c" * 5 + "T3BlbkFJ" + "Xy9z" * 5
AWS = "AKIA" + "QWERTYUI23456ABC"
GITHUB = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
GITHUB_FINE = "github_pat_" + "11ABCDEFG0" + "x" * 72
GITLAB = "glpat-" + "Zz9_Yy8-Xx7_Ww6-Vv5a"
SLACK = "xoxb-" + "1234567890" + "-" + "1234567890123" + "-" + "AbCdEfGhIjKl"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = "MIIEowIBAAKCAQEA" + "q" * 64
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
BASIC = "dXNlcjpodW50ZXIy"  # base64("user:hunter2")

# name, text, the secret that must go, the kind named in its place
FOUND: list[tuple[str, str, str, str]] = [
    ("anthropic", f"using key {ANTHROPIC} for this", ANTHROPIC, "anthropic-api-key"),
    ("openai project key", f"OPENAI key is {OPENAI}.", OPENAI, "openai-api-key"),
    ("openai legacy key", f"key: '{OPENAI_OLD}'", OPENAI_OLD, "openai-api-key"),
    ("aws access key", f"aws_access_key_id {AWS}\n", AWS, "aws-access-token"),
    ("github pat", f"git clone https://x.test/r ({GITHUB})", GITHUB, "github-pat"),
    ("github fine-grained", f"token {GITHUB_FINE} ok", GITHUB_FINE, "github-fine-grained-pat"),
    ("gitlab pat", f"glab auth {GITLAB}", GITLAB, "gitlab-pat"),
    ("slack bot", f"slack: {SLACK}", SLACK, "slack-bot-token"),
    ("stripe live", f"stripe {STRIPE} ", STRIPE, "stripe-access-token"),
    ("google api key", f"maps?k {GOOGLE} ", GOOGLE, "gcp-api-key"),
    ("jwt", f"cookie session={JWT}; Path=/", JWT, "jwt"),
    ("pem block", f"key:\n{PEM}\ndone", PEM_BODY, "private-key"),
    ("pem cut short", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}", PEM_BODY, "private-key"),
    ("bearer header", "Authorization: Bearer hunter2-xyz-123", "hunter2-xyz-123", "authorization"),
    ("basic header", f'-H "Authorization: Basic {BASIC}"', BASIC, "authorization"),
    ("header as json", '{"authorization": "tok-hunter2"}', "tok-hunter2", "authorization"),
    ("bearer alone", "sent Bearer hunter2token99 to the API", "hunter2token99", "bearer-token"),
    ("basic alone", f"basic {BASIC} sent", BASIC, "basic-auth"),
    ("url password", "postgres://app:hunter2@db:5432/prod", "hunter2", "url-password"),
    ("env file line", "OPENAI_API_KEY=hunter2\nDEBUG=1", "hunter2", "credential-assignment"),
    ("export", "export GITHUB_TOKEN='hunter2 x'", "hunter2 x", "credential-assignment"),
    ("query parameter", "GET /cb?access_token=hunter2&x=1", "hunter2", "credential-assignment"),
    ("camelCase name", "apiKey=hunter2", "hunter2", "credential-assignment"),
    ("password", 'DB_PASSWORD="hunter2"', "hunter2", "credential-assignment"),
]


@pytest.mark.parametrize(("name", "text", "secret", "kind"), FOUND, ids=[c[0] for c in FOUND])
def test_each_kind_is_replaced_in_place(name: str, text: str, secret: str, kind: str) -> None:
    """The secret's span becomes <redacted:KIND>; the text around it stays as it was."""
    new, kinds = redact_str(text)
    assert secret not in new and kind in kinds, (new, kinds)
    placeholder = f"<redacted:{kind}>"
    assert placeholder in new
    before, after = text.split(secret, 1)[0], text.rsplit(secret, 1)[-1]
    if kind != "private-key":  # a key block is replaced from BEGIN to END
        assert new.startswith(before[: max(0, len(before) - 20)]) and new.endswith(after[-5:])


KEPT = [
    "Starting server on port 3000",
    "a basic understanding of bearer authentication",
    "keyboard=us layout=dvorak PATH=/usr/bin path=/tmp",
    "token = os.environ['TOKEN']",
    "https://example.test/a?page=2 and ws://127.0.0.1:9229/x",
    "sk-not-a-key and AKIA short and ghp_tooShort",
    "TOKEN= (empty) and TOKEN=<redacted:credential-assignment>",
    "the word eyJ alone, and eyJhbGciOi without dots",
    "Basic auth is described in RFC 7617 (Basic dXNlcg== holds no colon)",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
]


@pytest.mark.parametrize("text", KEPT)
def test_near_misses_stay(text: str) -> None:
    """Text that only looks like a credential is kept byte for byte."""
    assert redact_str(text) == (text, [])


def test_lone_surrogates_and_bytes_survive() -> None:
    """A str with lone surrogates and non-UTF-8 bytes are redacted without loss elsewhere."""
    text = f"\ud800 {GITHUB} \udfff caf\u00e9"
    new, kinds = redact_str(text)
    assert new == "\ud800 <redacted:github-pat> \udfff caf\u00e9" and kinds == ["github-pat"]
    data = b"\xff\xfe " + GITHUB.encode() + b" \x80"
    assert redact_bytes(data) == (b"\xff\xfe <redacted:github-pat> \x80", ["github-pat"])


def test_a_key_block_printed_line_by_line_is_replaced_to_its_end() -> None:
    """BEGIN opens a block: the following lines are the key until END; then lines stay."""
    state = LineState()
    lines = [*PEM.split("\n"), "after the key", "next line"]
    out = [state.redact(line.encode())[0].decode() for line in lines]
    assert all(PEM_BODY not in line for line in out)
    assert out[:4] == ["<redacted:private-key>"] * 4 and out[4:] == lines[4:]
    unended = LineState()
    unended.redact(b"-----BEGIN PRIVATE KEY-----")
    assert unended.redact(PEM_BODY.encode())[0] == b"<redacted:private-key>"
    assert unended.open == credentials.BLOCK_LINES - 1  # bounded: it closes by itself


NAMES = [("apiKey", True), ("GITHUB_PAT", True), ("client_secret", True), ("keyboard", False)]


@pytest.mark.parametrize(("name", "expected"), NAMES)
def test_credential_names_are_the_recorders(name: str, expected: bool) -> None:
    """NAME=value uses the same rule as the recorder's keys, flags and variables."""
    from acp_trace.redaction.secrets import names_credential as recorders

    assert names_credential(name) is expected and recorders is names_credential


def test_vendored_rules_match_their_source_and_license() -> None:
    """gitleaks.py names its version; every rule compiles, has lowercase keywords, and the
    MIT license travels with it; the refresh script pins the same tag."""
    assert (ROOT / "src/acp_trace/credentials/LICENSE-gitleaks").read_text().startswith("MIT")
    script = (ROOT / "scripts/vendor_gitleaks_rules.py").read_text()
    assert f'TAG = "{gitleaks.VERSION}"' in script
    ids = {rule[0] for rule in gitleaks.RULES}
    for wanted in ("anthropic-api-key", "openai-api-key", "aws-access-token", "github-pat"):
        assert wanted in ids
    for rule in credentials.RULES:
        assert rule.keywords and all(k == k.lower() for k in rule.keywords), rule.kind
    assert set(credentials.kinds()) >= {"jwt", "private-key", "url-password", "slack-bot-token"}


def test_the_refresh_script_keeps_the_chosen_rules(tmp_path: Path) -> None:
    """scripts/vendor_gitleaks_rules.py on a gitleaks config: the chosen rules (by id prefix)
    with their regex, keywords and group, the others left out, the license copied."""
    rules = [
        ("github-pat", r"ghp_[0-9a-zA-Z]{36}", ["ghp_"], 0),
        ("jwt-base64", r"zxlk[a-z]+", ["zxlk"], 0),
        ("generic-api-key", r"(?i)key=([a-z]+)", ["key"], 0),
        ("stripe-access-token", r"\b((?:sk|rk)_live_[a-z]{10})", ["sk_live"], 1),
    ]
    toml = "".join(
        f"[[rules]]\nid = '{rule_id}'\nregex = '''{regex}'''\nkeywords = {keywords!r}\n"
        + (f"secretGroup = {group}\n" if group else "")
        for rule_id, regex, keywords, group in rules
    )
    (tmp_path / "gitleaks.toml").write_text(toml)
    (tmp_path / "LICENSE").write_text("MIT License\n")
    out = tmp_path / "out"
    out.mkdir()
    script = ROOT / "scripts" / "vendor_gitleaks_rules.py"
    args = ["--toml", str(tmp_path / "gitleaks.toml"), "--license", str(tmp_path / "LICENSE")]
    subprocess.run([sys.executable, str(script), *args, "--out", str(out)], check=True, timeout=120)
    namespace: dict[str, object] = {}
    exec((out / "gitleaks.py").read_text(), namespace)
    assert namespace["RULES"] == (
        ("github-pat", r"ghp_[0-9a-zA-Z]{36}", ("ghp_",), 0),
        ("stripe-access-token", r"\b((?:sk|rk)_live_[a-z]{10})", ("sk_live",), 1),
    )
    assert (out / "LICENSE-gitleaks").read_text() == "MIT License\n"


# Inputs that made backtracking regexes quadratic: each must finish well inside the guard.
HOSTILE = [
    "b'eyJ' * 400_000",
    "b'eyJhbGciOiJIUzI1NiJ9.' * 100_000",
    "b'sk-ant-api03-' + b'a' * 3_000_000",
    "b'a:' * 1_000_000 + b'//'",
    "b'x://' * 500_000",
    "b'x://u:' * 500_000",
    "b'API_KEY=' * 400_000",
    "b'key' * 1_000_000 + b'='",
    "b'A' * 2_000_000 + b'=' + b'b' * 1_000_000",
    "b'Bearer ' * 400_000",
    "b'Authorization: ' * 200_000",
    "b'-----BEGIN PRIVATE KEY-----' * 100_000",
    "b'basic ' + b'QUFB' * 700_000",
    "b'AKIA' * 1_000_000",
    "b'ghp_' * 1_000_000",
    "b'xoxb-1234567890-' * 200_000",
]


def test_hostile_inputs_take_linear_time() -> None:
    """Megabytes of each rule's keyword and charset: all done in one subprocess well within a
    generous hang guard (a quadratic pattern would take hours)."""
    code = textwrap.dedent(
        f"""
        from acp_trace.credentials import redact_bytes
        for source in {HOSTILE!r}:
            data = eval(source)
            new, kinds = redact_bytes(data)
            assert len(new) <= len(data) + 64 * len(kinds) + 64, source
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_the_first_pass_covers_every_rule() -> None:
    """Each rule's keywords hold a QUICK needle (in some case), but `credential-assignment`'s,
    which `may_assign` finds: no credential a rule finds is skipped by the cheap pass; and it
    stays one SIMD search."""
    assert len(credentials.QUICK) <= 64
    needles = [n.lower() for n in credentials.QUICK]
    for rule in credentials.RULES:
        if rule.kind == "credential-assignment":
            continue  # may_assign looks for it (tests/test_credential_gates.py)
        for keyword in rule.keywords:
            assert any(n in keyword for n in needles), (rule.kind, keyword)
    for _name, text, _secret, _kind in FOUND:
        assert credentials.may_hold(text.encode()), text
