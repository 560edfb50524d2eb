"""Matplotlib made to write nothing, decided before it is first imported.

Matplotlib, left alone, creates its config and cache folders (`~/.config/matplotlib`,
`~/.cache/matplotlib`, or a temporary folder when those cannot be written) and writes its
font list there. Here the bundled `matplotlibrc` is the config file (so the config folder is
never looked up on import), the config and cache folders are where matplotlib would look but
are never created, and the font list is built in memory (read from the cache when one is
there, never written). The package runs this on import (`mcpserver/__init__.py`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path


def matplotlib_writing_nothing() -> None:
    """Import matplotlib so that it creates no folder and writes no file (see the module);
    nothing to do when it is imported already."""
    if "matplotlib" in sys.modules:
        return
    spec = importlib.util.find_spec("matplotlib")
    origin = spec.origin if spec is not None else None
    if origin is None:
        return  # not installed: the import below says so
    rc = Path(origin).parent / "mpl-data" / "matplotlibrc"
    with _environ("MATPLOTLIBRC", str(rc)):
        import matplotlib
    from matplotlib import cbook

    config, cache = _folders()
    matplotlib.get_configdir = lambda: config
    matplotlib.get_cachedir = lambda: cache
    lock = cbook._lock_path

    def refused(path: object) -> contextlib.AbstractContextManager[None]:
        raise OSError(f"acp-trace mcp writes nothing ({path})")

    quiet = logging.getLogger("matplotlib.font_manager")
    level = quiet.level
    cbook._lock_path = refused  # the font list's only way to disk: json_dump takes a lock
    quiet.setLevel(logging.ERROR)  # "could not save font_manager cache": on purpose
    try:
        import matplotlib.font_manager
    finally:
        cbook._lock_path = lock
        quiet.setLevel(level)


def _folders() -> tuple[str, str]:
    """Matplotlib's config and cache folders, as it would choose them, never created."""
    own = os.environ.get("MPLCONFIGDIR")
    if own:
        return own, own
    home = Path.home() if "HOME" in os.environ else Path("/nonexistent")
    config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    cache = os.environ.get("XDG_CACHE_HOME") or str(home / ".cache")
    return os.path.join(config, "matplotlib"), os.path.join(cache, "matplotlib")


@contextlib.contextmanager
def _environ(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old
