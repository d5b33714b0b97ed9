#!/usr/bin/env bash
# Runs the review-fix pipeline offline: triage, a fix job per file it lists,
# review, each step an ordinary agent spec with a scripted model, over a
# scratch copy of the example workspace, so the repository is left as it was.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d "${TMPDIR:-/tmp}/agentspec-pipeline.XXXXXX")
cp -R examples/pipelines/review-fix/workspace/. "$work"

scripts/build-demo.sh
echo "workspace: $work" >&2
bin/agentspec graph examples/pipelines/review-fix/pipeline.yaml >&2
bin/agentspec run examples/pipelines/review-fix/pipeline.yaml --workspace "$work"

if command -v python3 >/dev/null; then
	echo >&2
	echo "--- python3 check.py in $work" >&2
	(cd "$work" && python3 check.py)
fi
