"""The environment the suite runs in (conftest.py at the root): a home of its own."""

from __future__ import annotations

from pathlib import Path

# The variables that lead to a person's own files, and where they point for the session
# (relative to its fresh HOME). ACP_TRACE_DIR is removed: a fresh machine has none.
HOME_VARIABLES = {
    "XDG_STATE_HOME": ".local/state",
    "XDG_CACHE_HOME": ".cache",
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "MPLCONFIGDIR": ".config/matplotlib",
}
UNSET = ("ACP_TRACE_DIR",)


def session_environment(home: Path, environ: dict[str, str]) -> dict[str, str]:
    """The environment of the suite: HOME and the XDG folders inside `home`; the peers' npm
    packages still in the person's cache (ACP_TRACE_CACHE, tests/peers), and npm still with
    their registry settings (NPM_CONFIG_USERCONFIG, their ~/.npmrc), so that a run does not
    download them again."""
    real = Path(environ.get("HOME") or Path.home())
    env = {k: v for k, v in environ.items() if k not in UNSET}
    env["HOME"] = str(home)
    env.update({name: str(home / where) for name, where in HOME_VARIABLES.items()})
    env.setdefault("ACP_TRACE_CACHE", str(real / ".cache" / "acp-trace"))
    npmrc = real / ".npmrc"
    if "NPM_CONFIG_USERCONFIG" not in env and npmrc.is_file():
        env["NPM_CONFIG_USERCONFIG"] = str(npmrc)
    return env
