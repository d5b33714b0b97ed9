#!/usr/bin/env bash
# Runs the quickstart agent offline: a scripted model drives the real agent loop
# and the real FileSystem tools over a scratch copy of the example workspace, so
# the repository is left as it was.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d "${TMPDIR:-/tmp}/agentspec-demo.XXXXXX")
cp -R examples/quickstart/workspace/. "$work"

scripts/build-demo.sh
echo "workspace: $work" >&2
bin/agentspec run examples/quickstart/agent.yaml --workspace "$work"

echo >&2
echo "--- $work/summary.md" >&2
cat "$work/summary.md"
