"""What `acp-trace record --listen HOST:PORT --upstream URL` is asked to do, checked before
anything starts: a listen address that parses, an upstream URL the proxy can reach (http,
https, ws or wss, with a host), and the listening socket bound (a port in use is the
user's error, one line and exit 2)."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from acp_trace.errors import RecordError, UsageError
from acp_trace.record.options import (
    DEFAULT_GRACE,
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_QUEUE_BYTES,
)

__all__ = ["RemoteOptions", "Upstream", "bind", "parse_listen", "parse_upstream"]

SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}


@dataclass(frozen=True)
class Upstream:
    """The agent's URL as given, and the origin (`http(s)://host:port`) requests go to."""

    url: str
    origin: str
    host: str


@dataclass(frozen=True)
class RemoteOptions:
    """`listen` (host, port), `upstream`, where the trace goes (`output`, `directory`), the
    redaction (`redact`, `redact_content`), `max_record_bytes`, `queue_bytes` (what may wait
    for the writer before messages are dropped from the record) and `grace` (seconds open
    streams get to end after Ctrl-C or SIGTERM)."""

    listen: tuple[str, int]
    upstream: Upstream
    output: str | None = None
    directory: str | None = None
    redact: bool = True
    redact_content: bool = True
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    queue_bytes: int = DEFAULT_QUEUE_BYTES
    grace: float = DEFAULT_GRACE


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:PORT` for IPv6; PORT 0 picks a free one)."""
    host, colon, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--listen {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port)


def parse_upstream(text: str) -> Upstream:
    """The agent's URL: http://, https://, ws:// or wss://, with a host."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"--upstream {text!r}: not a URL ({exc})") from None
    scheme = SCHEMES.get(parts.scheme.lower())
    if scheme is None or not parts.hostname:
        raise UsageError(
            f"--upstream {text!r}: expected an http://, https://, ws:// or wss:// URL with a host"
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    origin = f"{scheme}://{host}" + (f":{port}" if port is not None else "")
    return Upstream(url=text, origin=origin, host=parts.hostname)


def bind(listen: tuple[str, int]) -> socket.socket:
    """The listening socket, bound now so that a port in use stops the recorder at once."""
    host, port = listen
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise RecordError(f"--listen {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise RecordError(f"--listen {host}:{port}: cannot listen ({exc.strerror})") from None
    sock.setblocking(False)
    return sock
