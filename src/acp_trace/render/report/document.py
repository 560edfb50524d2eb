"""A small document model (headings, paragraphs, tables, images, code) with Markdown and HTML
renderings. Blocks hold plain text only; the renderers escape all of it, so text that comes
from a trace can neither break a table nor inject markup, and control, bidi and invisible
characters are shown as escapes (`\x1b`, `\u202e`), as on the terminal (`render.escape`):
a report read with `cat` or pasted into an issue shows what the trace held.

Markdown is written for GitHub, where a report is pasted into an issue: markup characters are
backslash-escaped, `<`, `>` and `&` become entities (no raw HTML), and words GitHub would turn
into something live (an `@mention` or team mention, a bare URL or `www.` link, an e-mail
address, an issue reference such as `#12` or `owner/repo#12`) go into code spans, where GitHub
links and notifies nothing and the text copies as it is. Images cannot be linked relatively
from an issue, so a chart is a line that names its file and says to drag it in.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field

from acp_trace.render.escape import terminal, terminal_lines

# Markdown: characters that could start emphasis, code, links, images, tables, headings or
# strikethrough.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#!])")
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Words that GitHub makes live: mentions, e-mail addresses, URLs, www. links, issue references.
# (A scheme is tried only where a run of scheme characters starts: linear in a long word.)
_LIVE = re.compile(
    r"@|(?<![a-z0-9+.-])[0-9+.-]*+[a-z][a-z0-9+.-]*:/|(^|\W)www\.|(^|[\s\w/.-])#\d", re.IGNORECASE
)
_PUNCTUATION = "()[]{}\"',.;:!?"  # around a live word, kept out of its code span
# At the start of a line: a list item (`- x`, `+ x`, `1. x`) or a block quote.
_LINE_START = re.compile(r"^(?:[-+](?=\s|$)|\d+(?=[.)](?:\s|$)))")


@dataclass(frozen=True)
class Heading:
    """A section heading (level 1 to 3)."""

    level: int
    text: str


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of plain text."""

    text: str


@dataclass(frozen=True)
class Table:
    """A table of plain-text cells; `numeric` columns are right-aligned."""

    columns: list[str]
    rows: list[list[str]]
    numeric: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Image:
    """A chart saved beside the document: HTML embeds it; Markdown names the file and says
    to drag it into the issue (GitHub shows no relative image in an issue)."""

    file: str
    alt: str


@dataclass(frozen=True)
class Bullets:
    """A list of items of plain text (each one line): a Markdown `- ` list, an HTML `<ul>`."""

    items: list[str]


@dataclass(frozen=True)
class Code:
    """A block of literal text, such as a command line."""

    text: str


Block = Heading | Paragraph | Table | Image | Bullets | Code


# ---------------------------------------------------------------- Markdown


def md_text(text: str, *, table: bool = False) -> str:
    """Plain text as Markdown that shows exactly that text, on one line: no markup, no HTML,
    nothing live (words GitHub would link or mention are code spans). In a table cell
    (`table`) a `|` inside a code span is escaped too, as GitHub tables need."""
    one_line = terminal(" ".join(text.splitlines())) if text else ""
    words = re.split(r"(\s+)", one_line)
    out = []
    for word in words:
        core = word.strip(_PUNCTUATION)
        if core and _LIVE.search(core):  # punctuation around it stays outside the code span
            start = word.index(core)
            before, after = word[:start], word[start + len(core) :]
            out.append(_md_plain(before) + md_code_span(core, table=table) + _md_plain(after))
        else:
            out.append(_md_plain(word))
    joined = "".join(out)
    return joined if table else _LINE_START.sub(_unlist, joined, count=1)


def _unlist(match: re.Match[str]) -> str:
    """`- x` -> `\\- x`; `1. x` -> `1\\. x`: no list item at the start of a line."""
    mark = match.group(0)
    return mark + "\\" if mark[0].isdigit() else "\\" + mark


def _md_plain(text: str) -> str:
    escaped = "".join(_MD_ENTITIES.get(c, c) for c in text)
    return _MD_SPECIAL.sub(r"\\\1", escaped)


def md_code_span(text: str, *, table: bool = False) -> str:
    """`text` as a code span: literal, never linked; the fence outgrows any run of backticks."""
    text = terminal(text)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {text} " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else text
    if table:
        padded = padded.replace("|", "\\|")
    return f"{fence}{padded}{fence}"


def _md_table(t: Table) -> list[str]:
    align = ["---:" if i in t.numeric else "---" for i in range(len(t.columns))]
    lines = [
        "| " + " | ".join(md_text(c, table=True) for c in t.columns) + " |",
        "| " + " | ".join(align) + " |",
    ]
    lines += ["| " + " | ".join(md_text(c, table=True) for c in row) + " |" for row in t.rows]
    return lines


def _md_code(text: str) -> list[str]:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "sh", terminal_lines(text.replace("\r", "")), fence]


def to_markdown(blocks: list[Block]) -> str:
    """The document as GitHub-flavoured Markdown."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + md_text(b.text))
        elif isinstance(b, Paragraph):
            out.append(md_text(b.text))
        elif isinstance(b, Table):
            out.append("\n".join(_md_table(b)))
        elif isinstance(b, Bullets):
            out.append("\n".join("- " + md_text(item) for item in b.items))
        elif isinstance(b, Image):
            out.append(
                f"> **Chart: {md_text(b.alt)}**: the file `{b.file}` beside this report "
                "(drag it into the issue to show it here; report.html has it embedded)."
            )
        else:
            out.append("\n".join(_md_code(b.text)))
    return "\n\n".join(out) + "\n"


# ---------------------------------------------------------------- HTML

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1240px; margin: 2em auto; padding: 0 1em;
       color: #1f2328; line-height: 1.45; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; height: auto; border: 1px solid #d0d7de; }
pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; }
"""
# Nothing but inline styles and embedded images: the page fetches and runs nothing.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def _h(text: str) -> str:
    return html.escape(terminal(text), quote=True)


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{_h(c)}</th>" for c in t.columns)
    rows = []
    for row in t.rows:
        cells = "".join(
            f'<td class="num">{_h(c)}</td>' if i in t.numeric else f"<td>{_h(c)}</td>"
            for i, c in enumerate(row)
        )
        rows.append(f"<tr>{cells}</tr>")
    return (
        f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>"
    )


def _html_block(b: Block, images: dict[str, bytes]) -> str:
    if isinstance(b, Heading):
        return f"<h{b.level}>{_h(b.text)}</h{b.level}>"
    if isinstance(b, Paragraph):
        return f"<p>{_h(b.text)}</p>"
    if isinstance(b, Table):
        return _html_table(b)
    if isinstance(b, Bullets):
        return "<ul>\n" + "".join(f"<li>{_h(item)}</li>\n" for item in b.items) + "</ul>"
    if isinstance(b, Image):
        data = images.get(b.file)
        if data is None:
            return f"<p>{_h(b.alt)} (chart not available)</p>"
        src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        return f'<p><img alt="{_h(b.alt)}" src="{src}"></p>'
    return f"<pre><code>{html.escape(terminal_lines(b.text), quote=True)}</code></pre>"


def to_html(blocks: list[Block], images: dict[str, bytes], title: str) -> str:
    """The document as one self-contained HTML page with the PNG images embedded."""
    body = "\n".join(_html_block(b, images) for b in blocks)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        f"<title>{_h(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )
