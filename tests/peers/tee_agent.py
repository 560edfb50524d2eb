"""A second, independent capture of an agent's stdio: `tee_agent.py IN OUT -- AGENT...`.

Runs AGENT in our process group, copies every byte it reads from our stdin to the agent's stdin
and to IN, and every byte the agent writes on stdout to OUT and then to our stdout (so OUT holds
at least what the client can have received). stderr is the agent's own. Exits with its code.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading


def pump(source: int, sink: int, copy: int) -> None:
    """Copy source to copy and then to sink until EOF (or a closed sink); closes sink at the end."""
    try:
        while chunk := os.read(source, 1 << 16):
            os.write(copy, chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(sink, view) :]
    except OSError:
        pass
    finally:
        os.close(sink)


def main() -> int:
    copy_in, copy_out, sep, *command = sys.argv[1:]
    assert sep == "--" and command, __doc__
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd_in, fd_out = os.open(copy_in, flags, 0o600), os.open(copy_out, flags, 0o600)
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    agent_in, agent_out = os.dup(proc.stdin.fileno()), os.dup(proc.stdout.fileno())
    proc.stdin.close()
    proc.stdout.close()
    threading.Thread(target=pump, args=(0, agent_in, fd_in), daemon=True).start()
    out = threading.Thread(target=pump, args=(agent_out, 1, fd_out))
    out.start()
    code = proc.wait()
    out.join()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
