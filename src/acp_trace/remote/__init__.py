"""The remote recorder: `acp-trace record --listen HOST:PORT --upstream URL`, a reverse proxy
between an editor and an agent that speaks ACP over Streamable HTTP or WebSocket, writing
trace format v1 (docs/trace-format.md, "Remote recordings"): `options.py` (the address, the
URL, the socket bound before anything starts), `proxy.py` (HTTP: bodies, statuses, SSE
streams passed on chunk by chunk), `websocket.py` (frames both ways), `sse.py` (events cut
out of a stream for the record), `writer.py` (the queue and the writer process), `encoder.py` (the writer process: the trace,
redacted through redaction/),
`run.py` (the front door: signals, the end of a recording). aiohttp is the `remote` extra.
"""
