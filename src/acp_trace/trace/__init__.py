"""Traces: the bytes of format v1 (`format`), finding trace files (`paths`), reading them into
the records table (`reader`: many files; `native`: one file; `blocks` and `records`: lines at
native speed with msgspec; `lines`: the exact line reader; `pool`: the process pool) and
converting other tools' captures (`importers`).

`format` and `paths` import no third-party package but orjson, so the recorder can write the
format without loading polars; the reader calls the importers, never the other way round."""
