"""Readable metavars in `--help`, as a Python CLI shows them: `--speed FLOAT`,
`--by [method|agent|trace]`, `TRACE...`, never typer's `<list[str]>`, `<int range>` or
`{TRACE}...`. An explicit metavar (`--marker-meta KEY`) is kept."""

from __future__ import annotations

from typing import Any, get_args, get_origin

LABELS = {int: "INTEGER", float: "FLOAT", str: "TEXT", bool: "BOOLEAN"}


def readable(param: Any) -> None:
    """Give `param` (a typer argument or option) a plain metavar for its help and usage."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return
    if param.param_type_name == "argument":
        _argument(param)
    elif param.metavar is None:
        param.metavar = label(param)


def label(param: Any) -> str:
    """INTEGER, FLOAT, TEXT, PATH or the choices `[a|b]` of a parameter's type."""
    desc = getattr(param, "type_descriptor", None)
    if desc is None:
        return "TEXT"
    if desc.is_choice and desc.choices:
        return "[" + "|".join(str(getattr(c, "value", c)) for c in desc.choices) + "]"
    if desc.is_path:
        return "PATH"
    annotation = desc.annotation
    if get_origin(annotation) is list:
        annotation = get_args(annotation)[0]
    return LABELS.get(annotation, "TEXT")


def _argument(param: Any) -> None:
    name = (param.metavar or param.name or "ARG").upper()
    many = param.nargs != 1 and not name.endswith("...")
    shown = name + ("..." if many else "")
    param.metavar = shown
    usage = shown if param.required else f"[{shown}]"
    param.display_type_rich = lambda ctx: None
    param._usage_display_name = lambda: usage
