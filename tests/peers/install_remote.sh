#!/usr/bin/env bash
# Install the official SDKs' remote transports for the remote recorder's peer tests, under
# ${ACP_TRACE_CACHE:-~/.cache/acp-trace}/peers (never inside the repository):
#   acp-remote/  npm: @agentclientprotocol/sdk 2.4.0 and ws 8.23.0 (its Node WebSocket)
#   acp-py/      a venv with the Python SDK 1.0.0rc3 (http extra) and uvicorn, pinned
#                (remote-requirements.txt, --no-deps)
# What is there already is left alone.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${ACP_TRACE_CACHE:-$HOME/.cache/acp-trace}/peers"
node_dir="$cache/acp-remote"
if ! grep -qs '"version": *"2.4.0"' "$node_dir/node_modules/@agentclientprotocol/sdk/package.json" \
  || ! grep -qs '"version": *"8.23.0"' "$node_dir/node_modules/ws/package.json"; then
  mkdir -p "$node_dir"
  echo "installing @agentclientprotocol/sdk@2.4.0 ws@8.23.0 into $node_dir" >&2
  (cd "$node_dir" && npm install --ignore-scripts --no-audit --no-fund \
    @agentclientprotocol/sdk@2.4.0 ws@8.23.0 >install.log 2>&1) || {
    echo "npm install failed; see $node_dir/install.log" >&2
    exit 1
  }
fi
py_dir="$cache/acp-py"
stamp="$py_dir/installed.txt"
if ! cmp -s "$here/remote-requirements.txt" "$stamp"; then
  rm -rf "$py_dir"
  mkdir -p "$py_dir"
  echo "installing the Python SDK 1.0.0rc3 into $py_dir" >&2
  python3 -m venv "$py_dir/venv" >/dev/null
  "$py_dir/venv/bin/pip" install --no-deps -r "$here/remote-requirements.txt" \
    >"$py_dir/install.log" 2>&1 || {
    echo "pip install failed; see $py_dir/install.log" >&2
    exit 1
  }
  cp "$here/remote-requirements.txt" "$stamp"
fi
