"""`acp-trace record --listen HOST:PORT --upstream URL`: the front door of the remote recorder.

Order: the options are checked and the listening socket bound (a bad URL or a port in use
stops it, one line, exit 2), the trace opened (as the tap opens it: -o, --dir, the default
folder), then the proxy serves until SIGINT, SIGTERM or SIGHUP. Then it stops taking
connections, gives what is in flight `grace` seconds, closes what stays open (each close
recorded), and ends the trace with `exit` and `account`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp_trace.errors import RecordError
from acp_trace.record.options import RecordOptions
from acp_trace.record.trace_file import TraceTarget, open_trace
from acp_trace.redaction.redactor import RedactionPolicy, Redactor
from acp_trace.redaction.secrets import scrub_url
from acp_trace.remote.options import RemoteOptions, bind
from acp_trace.remote.proxy import Proxy
from acp_trace.remote.sniff import Sniffer
from acp_trace.remote.writer import RemoteWriter
from acp_trace.trace.format import utc_now_rfc3339

__all__ = ["RemoteResult", "record_remote"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
MAX_HEADER_BYTES = 1 << 16  # a request line or header field the proxy accepts (aiohttp: 8 KiB)


@dataclass(frozen=True)
class RemoteResult:
    """How a remote recording ended: the trace, the records written, the messages dropped
    from a full queue and not written (with why the trace stopped, if it did)."""

    trace: str
    traces: list[str]  # one per ACP connection, `trace` first
    records: int
    dropped: int
    unwritten: int
    write_error: str | None


def record_remote(
    options: RemoteOptions,
    *,
    ready: Callable[[str, int], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> RemoteResult:
    """Record until a stop signal. `ready(host, port)` is called once the proxy listens."""
    sock = bind(options.listen)
    try:
        target = _open(options)
    except BaseException:
        sock.close()
        raise
    if (notice := target.notice or target.commit()) and warn is not None:
        warn(notice)
    t0 = time.monotonic_ns()
    writer = RemoteWriter(
        target,
        Redactor(RedactionPolicy(enabled=options.redact, content=options.redact_content)),
        options.max_record_bytes,
        options.queue_bytes,
        open_more=_more_traces(options, target.path),
    )
    host, port = sock.getsockname()[:2]
    writer.start(_header(options, f"{host}:{port}", writer.redactor))
    proxy = Proxy(
        options.upstream.origin, writer, t0, content=options.redact and options.redact_content
    )
    stopped = asyncio.run(_serve(sock, proxy, options.grace, ready))
    writer.finish(
        proxy.now(),
        {"code": None, "signal": None, "stopped_by": stopped, "reason": "the recorder was stopped"},
    )
    if writer.write_error and warn is not None:
        warn(writer.write_error)
    tallies = writer.tallies.values()
    return RemoteResult(
        trace=target.path,
        traces=writer.traces,
        records=writer.records,
        dropped=sum(t.dropped for t in tallies),
        unwritten=sum(t.unwritten for t in tallies),
        write_error=writer.write_error,
    )


def _open(options: RemoteOptions, output: str | None = None) -> TraceTarget:
    name = f"remote-{options.upstream.host}"
    chosen = RecordOptions(
        command=[name], output=output or options.output, directory=options.directory
    )
    return open_trace(chosen, os.environ)


def _more_traces(options: RemoteOptions, first: str) -> Callable[[int], TraceTarget | None]:
    """How the writer process opens the trace of the recording's n-th ACP connection: beside
    `-o FILE` as FILE-n.jsonl (FILE.jsonl's -n before the suffix), or a new file in the folder;
    none (everything in the first trace) when the first is no regular file (a FIFO, a device)
    or the new one cannot be opened."""
    if not os.path.isfile(first):
        return lambda _n: None

    def open_more(n: int) -> TraceTarget | None:
        base = first.removesuffix(".jsonl")
        try:
            target = _open(options, f"{base}-{n}.jsonl" if options.output else None)
        except RecordError:
            return None
        target.commit()
        return target

    return open_more


def _header(options: RemoteOptions, listen: str, redactor: Redactor) -> dict[str, Any]:
    from acp_trace import __version__

    upstream = scrub_url(options.upstream.url) if options.redact else options.upstream.url
    return {
        "started_at": utc_now_rfc3339(),
        "upstream": upstream,
        "listen": listen,
        "cwd": os.getcwd(),
        "pid": os.getpid(),
        "recorder": f"acp-trace {__version__}",
        "redaction": redactor.policy.header(),
        "max_record_bytes": options.max_record_bytes,
    }


async def _serve(
    sock: Any, proxy: Proxy, grace: float, ready: Callable[[str, int], None] | None
) -> int:
    """Serve until a stop signal; the signal's number."""
    from aiohttp import web

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    got: list[int] = []

    def stopped(signum: int) -> None:
        got.append(signum)
        stop.set()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stopped, int(sig))
    app = web.Application(client_max_size=0)  # no size limit: the proxy only passes bodies on
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    runner = web.AppRunner(
        app,
        handler_cancellation=True,  # a client that goes away ends its stream upstream too
        access_log=None,
        shutdown_timeout=grace,
        max_line_size=MAX_HEADER_BYTES,
        max_field_size=MAX_HEADER_BYTES,
    )
    await runner.setup()
    await proxy.start()
    assert runner.server is not None
    make_http = runner.server  # aiohttp's protocol factory, for the connections that speak HTTP/1.1
    server = await loop.create_server(
        lambda: Sniffer(make_http, proxy, proxy.next_exchange), sock=sock
    )
    if ready is not None:
        host, port = sock.getsockname()[:2]
        ready(host, port)
    await stop.wait()
    server.close()
    await proxy.stop_streams()
    await runner.cleanup()
    await proxy.close()
    for sig in STOP_SIGNALS:
        loop.remove_signal_handler(sig)
    return got[0]
