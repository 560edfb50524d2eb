"""The fleet from the command line: --scheduler gives the same output as a local run, the
dataset grows without duplicates, OTLP is written, mistakes are one line and exit 2."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_trace.trace.paths import find_traces
from clirun import Cli, Result
from fleetgen import write_traces


def _ran(result: Result) -> tuple[int, str, str]:
    return result.code, result.out, result.err


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """A LocalCluster of 2 worker processes on loopback; its scheduler's address."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address


@pytest.mark.parametrize(
    "command", [["replays", "--format", "json"], ["check", "--format", "json"], ["latency"]]
)
def test_scheduler_output_equals_the_local_one(
    tmp_path: Path,
    scheduler: str,
    cli: Cli,
    command: list[str],
) -> None:
    """The same command with --scheduler prints the same bytes and exits the same."""
    folder = write_traces(tmp_path / "t", 40)
    local = _ran(cli(*command, str(folder)))
    remote = _ran(cli(*command, "--scheduler", scheduler, str(folder)))
    assert remote == local


@pytest.mark.parametrize(
    "command", [["replays", "--format", "json"], ["check", "--format", "junit"], ["latency"]]
)
def test_workers_over_several_traces_print_what_one_process_prints(
    tmp_path: Path, cli: Cli, command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--workers 2 over a folder of traces (a stray file among them) runs the local pool of
    the fleet runner and prints the same bytes, warnings included, as one process."""
    import acp_trace.fleet

    calls: list[object] = []
    real = acp_trace.fleet.run

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append((kwargs["workers"], len(kwargs["found"])))  # the files, walked once
        return real(*args, **kwargs)

    monkeypatch.setattr(acp_trace.fleet, "run", counted)
    folder = write_traces(tmp_path / "t", 30)
    (folder / "agent.log").write_text("not a trace\n")
    one = _ran(cli(*command, str(folder)))
    two = _ran(cli(*command, "--workers", "2", str(folder)))
    assert calls == [(2, len(find_traces([folder])))]
    assert two == one and "agent.log" in one[2]


def test_workers_on_one_trace_read_it_in_ranges(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--workers 2 on a single trace does not start the fleet runner (it reads byte ranges)."""
    import acp_trace.fleet

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the fleet runner ran for one trace")

    monkeypatch.setattr(acp_trace.fleet, "run", refuse)
    folder = write_traces(tmp_path / "t", 1)
    code, out, _ = _ran(cli("replays", "--format", "json", "--workers", "2", str(folder)))
    assert code == 0 and json.loads(out)


def test_an_unreachable_scheduler_is_one_line(tmp_path: Path, cli: Cli) -> None:
    """A scheduler nobody listens at: exit 2 and one line naming it."""
    folder = write_traces(tmp_path / "t", 2)
    code, out, err = _ran(cli("replays", "--scheduler", "tcp://127.0.0.1:9", str(folder)))
    assert code == 2 and out == ""
    assert err.startswith("acp-trace: --scheduler tcp://127.0.0.1:9: cannot reach the scheduler")
    assert "Traceback" not in err


def test_the_dataset_grows_without_duplicates(tmp_path: Path, cli: Cli) -> None:
    """Exporting twice writes the traces once; the second run says so."""
    folder = write_traces(tmp_path / "t", 5, distinct=True)
    dataset = tmp_path / "ds"
    args = ["export", "--format", "parquet", "--dataset", str(dataset), str(folder)]
    code, out, _ = _ran(cli(*args))
    assert code == 0 and out.startswith(f"{dataset}: 5 new traces (0 already in the dataset): ")
    code, out, _ = _ran(cli(*args))
    assert out.startswith(f"{dataset}: 0 new traces (5 already in the dataset): 0 records")


def test_otlp_is_written_private(tmp_path: Path, cli: Cli) -> None:
    """export --format otlp -o FILE.json writes an ExportTraceServiceRequest, 0600."""
    folder = write_traces(tmp_path / "t", 3)
    out_file = tmp_path / "spans.json"
    code, _, _ = _ran(cli("export", "--format", "otlp", "-o", str(out_file), str(folder)))
    assert code == 0 and stat.S_IMODE(os.stat(out_file).st_mode) == 0o600
    assert len(json.loads(out_file.read_bytes())["resourceSpans"]) == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--format", "csv", "--dataset", "DS"],
            "acp-trace: --dataset DIR goes with --format parquet and without -o",
        ),
        (
            ["--format", "parquet", "--dataset", "DS", "-o", "x"],
            "acp-trace: --dataset DIR goes with --format parquet and without -o",
        ),
        (["--format", "parquet"], "acp-trace: --format parquet needs -o"),
        (
            ["--format", "csv", "-o", "x", "--scheduler", "tcp://127.0.0.1:9"],
            "acp-trace: --scheduler goes with --dataset",
        ),
    ],
)
def test_export_option_mistakes(
    tmp_path: Path,
    cli: Cli,
    args: list[str],
    message: str,
) -> None:
    """Options that do not go together: one line, exit 2."""
    folder = write_traces(tmp_path / "t", 1)
    code, _, err = _ran(cli("export", *args, str(folder)))
    assert code == 2 and err.startswith(message)
