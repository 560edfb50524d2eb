"""Assertions on the analysis of a test's trace. A failure's message is the finding itself
(rule, severity, side blamed, seq, session, message) or the replay row that broke the
expectation, with the trace it came from: never a bare `assert False`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from acp_trace.analysis import Analysis
from acp_trace.quantities import count, fixed, trimmed
from acp_trace.render.escape import terminal
from acp_trace.render.gap_source import gap_start


def finding_line(f: dict[str, Any]) -> str:
    """One finding as a person reads it."""
    session = f" session {f['session']}" if f.get("session") else ""
    return (
        f"{f['rule']} ({f['severity']}, blames the {f['side']}) at seq {f['seq']}{session}: "
        f"{terminal(str(f['message']))}"
    )


def findings_text(findings: pl.DataFrame, trace: Path | str) -> str:
    """Findings, one a line, then the trace they are in."""
    lines = [finding_line(f) for f in findings.iter_rows(named=True)]
    return "\n".join([*lines, f"trace: {trace}"])


class Expect:
    """Assertions on one trace's analysis."""

    def __init__(self, analysis: Analysis, trace: Path | str) -> None:
        self.analysis, self.trace = analysis, trace

    def findings(self, min_severity: str = "info") -> pl.DataFrame:
        """The check findings at or above `min_severity` (as `acp-trace check` gives them)."""
        return self.analysis.findings(min_severity=min_severity)

    def no_errors(self, allow: Iterable[str] = ()) -> None:
        """No finding of severity error, but of the rules in `allow` (rule ids: a known rule
        the agent breaks, allowed while it is fixed; UsageError for an unknown id)."""
        __tracebackhide__ = True
        errors = allowed_out(self.findings("error"), allow)
        if errors.height:
            raise AssertionError(
                f"{count(errors.height)} error finding(s):\n{findings_text(errors, self.trace)}"
            )

    def rule_absent(self, rule: str) -> None:
        """No finding of `rule`, whatever its severity (UsageError for an unknown rule id)."""
        __tracebackhide__ = True
        found = self.analysis.findings([rule])
        if found.height:
            raise AssertionError(
                f"rule {rule} found {count(found.height)} time(s):\n{findings_text(found, self.trace)}"
            )

    def replays(self, session: str | None = None) -> list[dict[str, Any]]:
        """The replay rows (of `session`, children excluded, when given), in order."""
        rows = self.analysis.replays
        if session is not None:
            rows = rows.filter(pl.col("session") == session)
        return list(rows.iter_rows(named=True))

    def replay(
        self, session: str | None = None, *, outcome: str | None = None, index: int = -1
    ) -> dict[str, Any]:
        """The `index`-th replay (default the last) of `session` (default: any root session);
        with `outcome`, assert it had that outcome (complete, v1_loaded, truncated, ...)."""
        __tracebackhide__ = True
        rows = self.replays(session)
        if session is None:
            rows = [r for r in rows if r["parent_session"] is None]
        if not rows:
            where = f" of session {session}" if session else ""
            raise AssertionError(f"no replay{where} in the trace\ntrace: {self.trace}")
        try:
            row = rows[index]
        except IndexError:
            raise AssertionError(
                f"replay number {index} asked, the trace has {count(len(rows))}\ntrace: {self.trace}"
            ) from None
        if outcome is not None and row["outcome"] != outcome:
            raise AssertionError(
                f"{_replay_name(row)}: outcome {row['outcome']}, expected {outcome}"
                f"{self._findings_on(row['session'])}\ntrace: {self.trace}"
            )
        return row

    def replay_matches(
        self,
        session: str | None = None,
        *,
        index: int = -1,
        missing: int = 0,
        extra: int = 0,
        duplicated: int = 0,
        id_changed: int = 0,
        reordered: int = 0,
        truncated: int = 0,
    ) -> dict[str, Any]:
        """The replay (as `replay` picks it) carried its session as the trace recorded it
        (docs/rules.md, "Replay fidelity"): it has a source, and at most the given number of
        messages missing, extra, repeated, under other ids, reordered or cut (0 by default).
        Returns the replay row; the failure lists the first differences."""
        __tracebackhide__ = True
        row = self.replay(session, index=index)
        if row["source"] is None:
            raise AssertionError(
                f"{_replay_name(row)}: no source to compare it with (no earlier replay or prompt "
                f"turn of the session in the trace)\ntrace: {self.trace}"
            )
        allowed = {"replay_missing": missing, "replay_extra": extra,
                   "replay_duplicated": duplicated, "replay_id_changed": id_changed,
                   "replay_reordered": reordered, "replay_truncated": truncated}  # fmt: skip
        over = [f"{k.removeprefix('replay_')} {row[k]} (at most {n})"
                for k, n in allowed.items() if (row[k] or 0) > n]  # fmt: skip
        if over:
            raise AssertionError(
                f"{_replay_name(row)} is not its session: {', '.join(over)}\n"
                f"{self._differences(row)}trace: {self.trace}"
            )
        return row

    def _differences(self, row: dict[str, Any]) -> str:
        """The first differences of a replay row, as `acp-trace fidelity` lists them."""
        from acp_trace.render.fidelity import fidelity_data, format_fidelity

        data = fidelity_data(self.analysis, session=row["session"], request_id=row["request_id"])
        return format_fidelity(data, limit=10)

    def gap_below(self, ms: float, session: str | None = None) -> None:
        """Every replay's gap (marker, else the last history update, to the response) is
        under `ms` milliseconds; a replay without a gap (no response) fails too."""
        __tracebackhide__ = True
        rows = self.replays(session)
        if not rows:
            raise AssertionError(f"no replay to measure a gap on\ntrace: {self.trace}")
        for row in rows:
            gap, source = gap_of(row)
            if gap is None or gap >= ms:
                said = (
                    "no gap (no response or no history)" if gap is None else f"{fixed(gap, 1)} ms"
                )
                raise AssertionError(
                    f"{_replay_name(row)}: gap {said}{source}, expected under {trimmed(ms, 6)} ms "
                    f"(outcome {row['outcome']})\ntrace: {self.trace}"
                )

    def _findings_on(self, session: str) -> str:
        found = self.findings("warning").filter(pl.col("session") == session)
        if not found.height:
            return ""
        return "\nfindings on that session:\n" + "\n".join(
            finding_line(f) for f in found.iter_rows(named=True)
        )


def allowed_out(findings: pl.DataFrame, allow: Iterable[str]) -> pl.DataFrame:
    """The findings without those of the allowed rules (UsageError for an unknown rule id)."""
    allow = list(allow)
    if not allow:
        return findings
    from acp_trace.analysis.front import check_rule_filter

    check_rule_filter(allow, "info")
    return findings.filter(~pl.col("rule").is_in(allow))


def gap_of(row: dict[str, Any]) -> tuple[float | None, str]:
    """A replay row's gap and where it was measured from, as every output names it
    (`gap_source`: the replay_complete marker, a vendor event, the last history update)."""
    if row.get("gap_ms") is None:
        return None, ""
    return row["gap_ms"], f" (from the {gap_start(row.get('gap_source'))})"


def _replay_name(row: dict[str, Any]) -> str:
    return (
        f"{row['method']} of session {terminal(str(row['session']))} "
        f"(request id {row['request_id']})"
    )
