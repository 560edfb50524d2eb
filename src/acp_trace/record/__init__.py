"""The recorder behind `acp-trace record`: the tap, the trace writer, the trace file and
redaction. It imports only the shared vocabulary (`errors`, `jsonrpc`) and the bytes of the
trace format (`acp_trace.trace.format`), never the analyzer: recording starts fast."""
