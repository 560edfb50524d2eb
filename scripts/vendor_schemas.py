"""Refresh the vendored ACP JSON Schemas from the npm package (src/acp_trace/analysis/schema/data).

    python scripts/vendor_schemas.py            # the pinned version (VERSION below)
    python scripts/vendor_schemas.py 2.5.0      # another version; then update docs/rules.md

`npm pack` fetches the package tarball with the ordinary npm client into a temporary folder;
the script copies `schema/v1/schema.json`, `schema/v2/schema.json`, their `.unstable.json`
variants and the package's LICENSE (Apache-2.0), and writes `source.json` (package, version,
sha256 of every file) and NOTICE. Nothing is downloaded when acp-trace runs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "@agentclientprotocol/sdk"
VERSION = "2.4.0"
FILES = (
    "schema/v1/schema.json",
    "schema/v1/schema.unstable.json",
    "schema/v2/schema.json",
    "schema/v2/schema.unstable.json",
    "LICENSE",
)
DATA = Path(__file__).resolve().parents[1] / "src" / "acp_trace" / "analysis" / "schema" / "data"
NOTICE = """The JSON Schemas in this folder (v1/, v2/) are the Agent Client Protocol schemas shipped in
the npm package {package}@{version} (its schema/ folder), copied unchanged by
scripts/vendor_schemas.py. They are licensed under the Apache License 2.0 (LICENSE, the
package's own copy); acp-trace itself is MIT licensed. source.json lists the sha256 of every
file as it came out of the package.
"""


def main(argv: list[str]) -> int:
    version = argv[0] if argv else VERSION
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["npm", "pack", f"{PACKAGE}@{version}", "--silent", "--pack-destination", tmp],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        (tarball,) = Path(tmp).glob("*.tgz")
        with tarfile.open(tarball) as archive:
            archive.extractall(tmp, filter="data")
        package = Path(tmp) / "package"
        manifest = json.loads((package / "package.json").read_text())
        if manifest.get("version") != version:
            sys.exit(f"npm gave {manifest.get('version')}, expected {version}")
        sums = {}
        for name in FILES:
            target = DATA / name.removeprefix("schema/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(package / name, target)
            sums[name.removeprefix("schema/")] = hashlib.sha256(target.read_bytes()).hexdigest()
    source = {"package": PACKAGE, "version": version, "license": "Apache-2.0", "sha256": sums}
    (DATA / "source.json").write_text(json.dumps(source, indent=2) + "\n")
    (DATA / "NOTICE").write_text(NOTICE.format(package=PACKAGE, version=version))
    print(f"vendored {PACKAGE}@{version} into {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
