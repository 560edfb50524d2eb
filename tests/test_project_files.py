"""Housekeeping: the licence pyproject names is in the tree, and a test run keeps only the
temporary folders of the tests that failed."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_license_file_is_the_one_pyproject_names() -> None:
    """pyproject says MIT and ships LICENSE; LICENSE is the MIT licence text."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n\nCopyright (c) ")
    assert "Permission is hereby granted, free of charge" in text


def test_only_failed_tests_keep_their_temporary_folders() -> None:
    """tmp_path folders of passing tests are removed (a run left 1.4 GB behind)."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["tmp_path_retention_policy"] == "failed"
