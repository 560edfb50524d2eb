"""The remote recorder: `acp-trace record --listen HOST:PORT --upstream URL`, a reverse proxy
between an editor and an agent that speaks ACP over Streamable HTTP or WebSocket, writing
trace format v1 (docs/trace-format.md, "Remote recordings"), one trace per ACP connection:
`options.py` (the address, the URL, the socket bound before anything starts), `sniff.py`
(HTTP/1.1 to aiohttp, h2c to `h2c.py`), `proxy.py`
(HTTP exchanges: bodies, statuses), `relay.py` (a response passed on chunk by chunk, read for
the record), `websocket.py` (frames both ways), `sse.py` (events cut out of a stream for the
record), `writer.py` (the queue and the writer process), `encoder.py` (the writer process:
the traces, redacted through redaction/), `run.py` (the front door: signals, the end of a
recording). aiohttp and h2 are the `remote` extra.
"""
