"""bench_watch.py's screen variant: the watch screen (Textual, headless) on a folder, timing
when records become visible: every SAMPLE-th record read, its tap stamp to the end of the
first screen refresh after the redraw that shows it (Textual's `call_after_refresh`: the
frame is composed, as it would be written to a terminal). Exits once every trace has ended;
prints one JSON line of figures.

    python benchmarks/watch_screen_probe.py FOLDER READY_FILE (written once it is up)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from acp_trace.watch.engine import Engine
from acp_trace.watch.live import Change, Live
from acp_trace.watch.screen import WatchApp

SAMPLE = 50  # one record in SAMPLE is timed


class SampledLive(Live):
    """The live picture, noting the tap stamp of every SAMPLE-th record it is fed."""

    def __init__(self) -> None:
        super().__init__()
        self.fed = 0
        self.waiting: list[float] = []  # wall clock stamps of sampled records not shown yet

    def feed(self, name: str, line: bytes) -> list[Change]:
        changes = super().feed(name, line)
        self.fed += 1
        if self.fed % SAMPLE == 0:
            trace = self.traces[name]
            wall = trace.wall(trace.last_t)
            if wall is not None:
                self.waiting.append(wall)
        return changes


class Probe(WatchApp):
    latency: list[float]
    live: SampledLive

    def redraw(self, *, force: bool = True) -> None:
        before = self.redraws
        super().redraw(force=force)
        if self.redraws == before or not self.live.waiting:
            return
        shown, self.live.waiting = self.live.waiting, []
        self.call_after_refresh(self._painted, shown)

    def _painted(self, shown: list[float]) -> None:
        now = time.time()
        self.latency.extend((now - wall) * 1000 for wall in shown)

    def step(self) -> None:
        super().step()
        if not READY.exists():
            READY.write_text("ready\n")
        if self.engine.all_ended():
            self.exit()


READY = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("/dev/null")


def main() -> None:
    live = SampledLive()
    engine = Engine([sys.argv[1]], live=live, background=True)
    engine.judge.warm()
    app = Probe(engine)
    app.latency, app.live = [], live
    app.run(headless=True)
    print(json.dumps({"latency": app.latency, "redraws": app.redraws}))


if __name__ == "__main__":
    main()
