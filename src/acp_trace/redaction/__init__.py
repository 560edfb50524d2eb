"""Redaction: what of a trace's contents is replaced before a person or a file sees it
(docs/trace-format.md, "Redaction"), one implementation for the tap, the outputs (export,
report, dataset), the MCP server and the mock.

- `redactor.py`: the recorded copy of a line (`Redactor.line_payload`: the prefilter, the
  exact path, placeholders) and the header's command (`redact_command`);
- `rules.py`: the policy's rules on one parsed JSON-RPC message; `policy.py`: the policy as
  data (the header's `redaction`, the docs' table);
- `secrets.py`: what a secret looks like in a name, a URL, an argv or a command line;
- `free_text.py`: credentials in free text (acp_trace.credentials finds them) replaced in a
  line or in the strings of a JSON value;
- `strict_json.py`: the strict parse of the exact path, and writing a value back;
- `records.py`: the same free-text redaction over a records table (polars), for outputs.

It imports only the shared vocabulary and the bytes of the trace format
(`acp_trace.trace.format`): the tap loads it in its writer process, and nothing here loads
polars but `records.py`, which only the outputs import. This module imports nothing."""
