"""The drive as one call: options checked, the recording read, played, compared."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from acp_trace.drive.compare import Comparison, Threshold, compare
from acp_trace.drive.player import PlayOptions, PlayResult, play
from acp_trace.drive.script import Script, load_script
from acp_trace.errors import RecordError, UsageError
from acp_trace.files import check_file_target, output_dir
from acp_trace.record.trace_file import default_trace_dir, trace_file_name

TRACE_DIR_ENV = "ACP_TRACE_DIR"


@dataclass(frozen=True)
class DriveOptions:
    """What `acp-trace drive` was asked."""

    recording: Path
    command: tuple[str, ...]
    output: Path | None = None  # the new trace; None: a new file in `directory`
    directory: Path | None = None  # None: $ACP_TRACE_DIR, else the tap's default folder
    protocol: int | None = None
    speed: float = 1.0
    timeout: float = 60.0
    grace: float = 5.0
    sessions: tuple[str, ...] = ()  # RECORDED=LIVE
    cwd: str | None = None
    threshold: Threshold | None = None
    env: dict[str, str] | None = None


@dataclass
class DriveOutcome:
    """The script played, what the play did, and the comparison with the recording."""

    script: Script
    play: PlayResult
    comparison: Comparison

    @property
    def regressed(self) -> bool:
        """True when something got worse than the recording."""
        return bool(self.comparison.regressions)


def session_pairs(texts: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """`RECORDED=LIVE` pairs; UsageError for anything else."""
    pairs = []
    for text in texts:
        recorded, eq, live = text.partition("=")
        if not eq or not recorded or not live:
            raise UsageError(f"--session {text}: expected RECORDED=LIVE (two session ids)")
        pairs.append((recorded, live))
    return tuple(pairs)


def trace_target(opts: DriveOptions) -> Path:
    """Where the new trace goes: -o, else a new name in the trace folder; never the
    recording itself."""
    if opts.output is not None:
        target = opts.output.expanduser()
        check_file_target(target)
    else:
        env = os.environ if opts.env is None else {**os.environ, **opts.env}
        folder = opts.directory or Path(env.get(TRACE_DIR_ENV) or default_trace_dir(env))
        folder = output_dir(folder.expanduser())  # as the tap makes it: 0700
        name = trace_file_name(list(opts.command), datetime.now(UTC))
        target = folder / name
        for attempt in range(2, 100):
            if not target.exists():
                break
            target = folder / f"{name.removesuffix('.jsonl')}-{attempt}.jsonl"
    if target.exists() and target.resolve() == opts.recording.expanduser().resolve():
        raise UsageError(f"-o {target}: that is the recording; the new trace needs its own file")
    return target


def run_drive(opts: DriveOptions) -> DriveOutcome:
    """Check the options, read the recording, play it behind the tap, compare."""
    if not opts.command:
        raise UsageError("drive: expected the agent command after `--`")
    if opts.speed < 0:
        raise UsageError(f"--speed {opts.speed:g}: expected 0 (no pauses) or more")
    if opts.recording.expanduser().is_dir():
        raise UsageError(f"drive: {opts.recording} is a directory; expected one trace file")
    sessions = session_pairs(opts.sessions)
    target = trace_target(opts)
    script = load_script(opts.recording.expanduser())
    play_opts = PlayOptions(
        command=opts.command,
        trace=target,
        protocol=opts.protocol,
        speed=opts.speed,
        timeout=opts.timeout,
        grace=opts.grace,
        sessions=sessions,
        cwd=opts.cwd,
        env=opts.env,
    )
    result = play(script, play_opts)
    if not target.exists() or target.stat().st_size == 0:
        said = result.tap_stderr.strip().splitlines()
        raise RecordError(
            f"drive: the tap wrote no trace at {target} (exit {result.tap_exit})"
            + (f": {said[-1]}" if said else "")
        )
    return DriveOutcome(
        script, result, compare(opts.recording.expanduser(), result, opts.threshold)
    )
