"""The drive as one call: options checked, the recording read, played, compared."""

from __future__ import annotations

import math
import os
import stat
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from acp_trace.drive.compare import Comparison, Threshold, compare
from acp_trace.drive.content import DEFAULT_HISTORY_DROP
from acp_trace.drive.player import PlayOptions, PlayResult, play
from acp_trace.drive.script import Script, load_script
from acp_trace.drive.tap import seconds_problem
from acp_trace.errors import InputError, RecordError, UsageError
from acp_trace.weight import DEFAULT, WeightOptions


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
    history_drop: float = DEFAULT_HISTORY_DROP  # percent (drive/content.py)
    weight: WeightOptions = DEFAULT  # the client limits and deadlines findings compare with
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


def trace_target(opts: DriveOptions) -> tuple[Path, bool]:
    """Where the new trace goes, opened by the tap's own rules (record/trace_file.py) and
    whether drive made the file: `-o FILE` (a new file, made now, or an earlier trace the tap
    replaces whole; never the recording, a link, a directory or another kind of file); else a
    new file named after the time and the agent in `--dir`, $ACP_TRACE_DIR or the tap's folder
    ($XDG_STATE_HOME/acp-trace/traces), missing folders made 0700, the name taken with
    O_EXCL so nothing is ever overwritten."""
    from acp_trace.record.options import RecordOptions
    from acp_trace.record.trace_file import open_trace

    env = dict(os.environ if opts.env is None else {**os.environ, **opts.env})
    output = opts.output.expanduser() if opts.output is not None else None
    if output is not None:
        _check_output(output, opts.recording.expanduser())
    asked = RecordOptions(list(opts.command), output=output, directory=opts.directory)
    opened = open_trace(asked, env)
    if not opened.created:  # an earlier trace: the tap replaces it once the agent runs
        opened.abandon()
        return Path(opened.path), False
    assert opened.fd is not None
    os.close(opened.fd)
    return Path(opened.path), True


def _check_output(output: Path, recording: Path) -> None:
    """-o must be a file drive can read back, and not the recording."""
    with suppress(OSError):
        mode = output.lstat().st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            raise UsageError(
                f"-o {output}: expected a file (drive reads the new trace back to compare it), "
                "found a FIFO or a device"
            )
        if output.samefile(recording):
            raise UsageError(
                f"-o {output}: that is the recording; the new trace needs its own file"
            )


def check_recording(path: Path) -> None:
    """The recording exists and is a file that can be opened; InputError naming it if not."""
    if path.is_dir():
        raise UsageError(f"drive: {path} is a directory; expected one trace file")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise InputError(f"{path}: cannot read the recording ({exc.strerror or exc})") from exc


def run_drive(opts: DriveOptions) -> DriveOutcome:
    """Check the options, then that the recording exists, then the new trace's place; read
    the recording, play it behind the tap, compare. A new trace file drive made is removed
    again when nothing was played into it."""
    check_options(opts)
    sessions = session_pairs(opts.sessions)
    recording = opts.recording.expanduser()
    check_recording(recording)
    target, made = trace_target(opts)
    try:
        script = load_script(recording)
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
    except BaseException:
        if made:
            _remove_if_empty(target)
        raise
    if not target.exists() or target.stat().st_size == 0:
        if made:
            _remove_if_empty(target)
        said = result.tap_stderr.strip().splitlines()
        raise RecordError(
            f"drive: the tap wrote no trace at {target} (exit {result.tap_exit})"
            + (f": {said[-1]}" if said else "")
        )
    return DriveOutcome(
        script, result, compare(recording, result, opts.threshold, opts.history_drop, opts.weight)
    )


def check_options(opts: DriveOptions) -> None:
    """The usage errors, before anything is read or made: no agent, a bad pace or wait."""
    if not opts.command:
        raise UsageError("drive: expected the agent command after `--`")
    if not (math.isfinite(opts.speed) and opts.speed >= 0):
        raise UsageError(f"--speed {opts.speed:g}: expected 0 (no pauses) or more")
    for problem in (seconds_problem("--timeout", opts.timeout, zero=False),
                    seconds_problem("--grace", opts.grace, zero=True)):  # fmt: skip
        if problem is not None:
            raise UsageError(problem)


def _remove_if_empty(path: Path) -> None:
    with suppress(OSError):
        if path.stat().st_size == 0:
            path.unlink()
