"""What turns an analysis into something to look at or to load elsewhere: charts (`plots`),
text, JSON, CSV, JUnit and the bug-report bundle (`report`), table exports (`export`) and
Perfetto traces (`perfetto`). It reads `acp_trace.analysis`; nothing below imports it."""
