#!/usr/bin/env bash
# Build acp-devtools 0.4.0 (github maksugr/acp-devtools, tag v0.4.0) from source into
# ${ACP_TRACE_CACHE:-~/.cache/acp-trace}/acp-devtools/src-0.4.0, never inside the repository.
# Usage: install_devtools.sh [GIT_DIR_OR_URL]   (default: the GitHub repository)
# A build already there is left alone. Needs git, the system node and npm, and a C++ compiler:
# better-sqlite3 12.10.0 is compiled against the node that runs it when its prebuilt binary
# cannot be downloaded (here: node 20.20.2, whose headers are installed; acp-devtools asks
# for node >= 22 but runs on 20).
set -euo pipefail
version=0.4.0
source="${1:-https://github.com/maksugr/acp-devtools.git}"
dir="${ACP_TRACE_CACHE:-$HOME/.cache/acp-trace}/acp-devtools/src-$version"
if [ -f "$dir/packages/cli/dist/index.js" ] && node "$dir/packages/cli/dist/index.js" --version >/dev/null 2>&1 \
  && (cd "$dir" && node -e "new (require('better-sqlite3'))(':memory:')") >/dev/null 2>&1; then
  exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
if [ -d "$source" ]; then
  git --git-dir="$source" archive "v$version" | tar -x -C "$dir"
else
  tmp="$(mktemp -d)"
  git clone --quiet --depth 1 --branch "v$version" "$source" "$tmp/repo"
  git -C "$tmp/repo" archive HEAD | tar -x -C "$dir"
  rm -rf "$tmp"
fi
cd "$dir"
npm ci --no-audit --no-fund >install.log 2>&1
# the SQLite binding must load in this node (npm may have skipped or misbuilt it)
if ! node -e "new (require('better-sqlite3'))(':memory:')" >/dev/null 2>&1; then
  npm rebuild better-sqlite3 --foreground-scripts >>install.log 2>&1
fi
npm run build >>install.log 2>&1
node packages/cli/dist/index.js --version
