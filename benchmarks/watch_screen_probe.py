"""bench_watch.py's screen variant: the watch screen (Textual, headless) on a folder, timing
each redraw that shows new records: the tap's stamp of the newest record shown to the end of
that redraw. Exits once every trace has ended; prints one JSON line of figures.

    python benchmarks/watch_screen_probe.py FOLDER READY_FILE (written once it is up)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from acp_trace.watch.engine import Engine
from acp_trace.watch.screen import WatchApp


class Probe(WatchApp):
    latency: list[float]

    def redraw(self, *, force: bool = True) -> None:
        before = self.redraws
        super().redraw(force=force)
        if self.redraws == before:
            return
        now = time.time()
        for trace in self.engine.live.traces.values():
            wall = trace.wall(trace.last_t)
            if wall is not None and trace.ended is None:
                self.latency.append((now - wall) * 1000)

    def step(self) -> None:
        super().step()
        if not READY.exists():
            READY.write_text("ready\n")
        if self.engine.all_ended():
            self.exit()


READY = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("/dev/null")


def main() -> None:
    engine = Engine([sys.argv[1]])
    engine.judge.warm()
    app = Probe(engine)
    app.latency = []
    app.run(headless=True)
    print(json.dumps({"latency": app.latency, "redraws": app.redraws}))


if __name__ == "__main__":
    main()
