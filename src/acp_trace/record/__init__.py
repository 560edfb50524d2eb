"""The recorder behind `acp-trace record`: the tap, the trace writer and the trace file. It
imports only the shared vocabulary (`errors`, `jsonrpc`, ...), the bytes of the trace format
(`acp_trace.trace.format`) and the redaction of the recorded copy (`acp_trace.redaction`),
never the analyzer: recording starts fast."""
